"""File formats: the TF protos zmtf reads and writes (real protobuf messages built from zmtf's
schema tables, proto_message.py), CRC32C (google-crc32c), TFRecord and its compression, PNG
and JPEG (Pillow) and WAV (wave)."""
