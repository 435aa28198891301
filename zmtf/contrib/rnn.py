"""``tf.contrib.rnn``: the core cells and static RNNs under their contrib names (the cells
are the same classes as ``tf.nn.rnn_cell``'s, with TF1's variable names)."""

from zmtf.ops.rnn import static_bidirectional_rnn, static_rnn
from zmtf.ops.rnn_cell import (
    BasicLSTMCell, BasicRNNCell, DeviceWrapper, DropoutWrapper, GRUCell, LSTMCell, LSTMStateTuple,
    MultiRNNCell, ResidualWrapper, RNNCell,
)

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell",
           "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper", "static_bidirectional_rnn", "static_rnn"]
