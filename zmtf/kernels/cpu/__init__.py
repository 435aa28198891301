"""CPU kernels. Importing this package registers them all; nothing is compiled until used.

One module per family: elementwise, reduce, matmul, nn, conv and pool (over the sliding
windows of windows.py), random, array, selection, partition, scatter, state (sparse_apply:
the optimizers' row updates; adadelta_ftrl: Adadelta and FTRL), data_flow (queues and
accumulators), dataset (tf.data iterators) and readers (TF1's file readers), whose shared state is in zmtf/runtime. _jit holds the numba policy (decorator
options, caching, thread count, numpy/numba threshold).
"""

from zmtf.kernels.cpu import (
    adadelta_ftrl, adagrad_da, array, bincount, control_flow, conv, data_flow, dataset, diag, elementwise, linalg, matmul, nn, partition, pool, random,
    proximal, reduce, scatter, segment, selection, sparse_apply, special, state, summary, topk, unique,
)
from zmtf.kernels.cpu import image  # noqa: F401 (registers the image kernels)
from zmtf.kernels.cpu import complex_math  # noqa: F401 (Complex, Real, Imag, Conj, ComplexAbs, Angle)
from zmtf.kernels.cpu import sampling, sequence  # noqa: F401 (samplers, ReverseSequence, GatherNd, ScatterNd)
from zmtf.kernels.cpu import parsing, strings  # noqa: F401 (tf.string kernels, ParseExample)
from zmtf.kernels.cpu import readers  # noqa: F401 (TF1's file readers)
from zmtf.kernels.cpu import files  # noqa: F401 (ReadFile, WriteFile, MatchingFiles, base64)
from zmtf.kernels.cpu import depthwise_conv  # noqa: F401 (DepthwiseConv2dNative and backprops)
from zmtf.kernels.cpu import fused_batch_norm  # noqa: F401 (FusedBatchNormV3 and its gradient)
from zmtf.kernels.cpu import space_batch  # noqa: F401 (SpaceToDepth, SpaceToBatchND and inverses)
from zmtf.kernels.cpu import window_taps  # noqa: F401 (Conv3D, 3-D pools, MaxPoolWithArgmax)
from zmtf.kernels.cpu import ctc  # noqa: F401 (CTCLoss, CTCGreedyDecoder)
from zmtf.kernels.cpu import image_color  # noqa: F401 (RGBToHSV, HSVToRGB, AdjustHue, AdjustSaturation)
from zmtf.kernels.cpu import image_resize  # noqa: F401 (ResizeBicubic and its gradient, ResizeArea)
from zmtf.kernels.cpu import image_boxes  # noqa: F401 (CropAndResize, NonMaxSuppression*, boxes)
from zmtf.kernels.cpu import image_codecs  # noqa: F401 (DecodePng, DecodeImage, EncodePng)
from zmtf.kernels.cpu import decode_csv, script  # noqa: F401 (DecodeCSV, PyFunc)
from zmtf.kernels.cpu import lookup, text  # noqa: F401 (lookup tables, string transforms)
from zmtf.kernels.cpu import tensor_array  # noqa: F401 (TensorArray values and gradients)
from zmtf.kernels.cpu import gather_tree  # noqa: F401 (GatherTree, for beam search)
from zmtf.kernels.cpu import index, print_v2, search, shape_checks  # noqa: F401 (tf.print, tf.searchsorted, ...)
from zmtf.kernels.cpu import random_distributions  # noqa: F401 (Multinomial, RandomGamma, RandomPoissonV2)
from zmtf.kernels.cpu import sparse, sparse_math, string_split  # noqa: F401 (the SparseTensor ops)
from zmtf.kernels.cpu import sparse_cross  # noqa: F401 (SparseCross, Bucketize: feature columns)
from zmtf.kernels.cpu import linalg_decomp  # noqa: F401 (SelfAdjointEigV2, Svd, Cross, MatrixSolveLs)
from zmtf.kernels.cpu import incomplete_gamma_beta, special_inverse_bessel  # noqa: F401 (Igamma, Betainc, Erfinv, Bessel, ...)
from zmtf.kernels.cpu import sets  # noqa: F401 (tf.sets)
from zmtf.kernels.cpu import summary_audio_tensor  # noqa: F401 (AudioSummaryV2, TensorSummaryV2)
from zmtf.kernels.cpu.state import VariableRef

__all__ = ["VariableRef", "adadelta_ftrl", "adagrad_da", "array", "bincount", "control_flow", "conv", "data_flow", "dataset", "diag", "elementwise",
           "linalg", "matmul", "nn", "partition", "pool", "proximal", "random", "reduce", "scatter", "segment", "selection", "sparse_apply",
           "special", "state", "summary", "topk", "unique"]
