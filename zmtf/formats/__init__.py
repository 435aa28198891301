"""File formats: the TF protos zmtf reads and writes (real protobuf messages built from zmtf's
schema tables, proto_message.py), CRC32C, TFRecord and its compression, PNG and WAV."""
