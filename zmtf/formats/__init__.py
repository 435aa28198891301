"""File formats: protobuf wire encoding and text protos, the TF protos zmtf reads and writes,
CRC32C, TFRecord and its compression, PNG and JPEG (Pillow) and WAV (wave)."""

# str() of any message is its text format, which proto_text registers into proto_message when
# imported; every module of this package is imported after this file runs.
from zmtf.formats import proto_text  # noqa: E402, F401
