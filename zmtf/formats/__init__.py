"""File formats: protobuf wire encoding and text protos, the TF protos zmtf reads and writes,
CRC32C, TFRecord and its compression, PNG and WAV."""
