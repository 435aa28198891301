"""``tf.contrib.seq2seq``: TF1's sequence-to-sequence core. ``sequence_loss``; the helpers
(``TrainingHelper``, ``GreedyEmbeddingHelper``, ``SampleEmbeddingHelper``);
``BasicDecoder`` and ``dynamic_decode`` (one tf.while_loop, differentiable); attention
(``BahdanauAttention``, ``LuongAttention``, ``AttentionWrapper``); beam search
(``BeamSearchDecoder``, ``tile_batch``, ``gather_tree``). The monotonic attentions and the
custom/scheduled helpers are not built: asking for them says so."""

from __future__ import annotations

from typing import Any

from zmtf.contrib.seq2seq.attention_mechanism import (
    AttentionMechanism, BahdanauAttention, LuongAttention,
)
from zmtf.contrib.seq2seq.attention_wrapper import AttentionWrapper, AttentionWrapperState
from zmtf.contrib.seq2seq.beam_search_decoder import (
    BeamSearchDecoder, BeamSearchDecoderOutput, BeamSearchDecoderState,
    FinalBeamSearchDecoderOutput, tile_batch,
)
from zmtf.contrib.seq2seq.basic_decoder import BasicDecoder, BasicDecoderOutput
from zmtf.contrib.seq2seq.decoder import Decoder, dynamic_decode
from zmtf.contrib.seq2seq.helper import (
    GreedyEmbeddingHelper, Helper, SampleEmbeddingHelper, TrainingHelper,
)
from zmtf.contrib.seq2seq.loss import sequence_loss
from zmtf.ops.gather_tree_ops import gather_tree

__all__ = ["AttentionMechanism", "AttentionWrapper", "AttentionWrapperState",
           "BahdanauAttention", "BasicDecoder", "BasicDecoderOutput", "BeamSearchDecoder",
           "BeamSearchDecoderOutput", "BeamSearchDecoderState", "Decoder",
           "FinalBeamSearchDecoderOutput", "GreedyEmbeddingHelper", "Helper", "LuongAttention",
           "SampleEmbeddingHelper", "TrainingHelper", "dynamic_decode", "gather_tree",
           "sequence_loss", "tile_batch"]


def __getattr__(name: str) -> Any:
    raise AttributeError(f"tf.contrib.seq2seq.{name} is not built in zmtf (of tf.contrib.seq2seq "
                         f"zmtf has {', '.join(__all__)}); the monotonic attentions and the "
                         f"custom/scheduled helpers are not built")
