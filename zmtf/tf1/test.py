"""``tf.test``: what TF1 test code uses: TestCase, the gradient checker, an in-process
local cluster (create_local_cluster) and device queries (all in ``zmtf.testing``)."""

from unittest import mock

from zmtf.testing.benchmark import Benchmark, benchmark_config
from zmtf.testing.gradient_checker import compute_gradient, compute_gradient_error
from zmtf.testing.test_helpers import (
    create_local_cluster, gpu_device_name, is_built_with_cuda, is_built_with_gpu_support, is_gpu_available,
)
from zmtf.testing.testcase import TestCase, get_temp_dir, main

__all__ = ["Benchmark", "TestCase", "benchmark_config", "compute_gradient", "compute_gradient_error", "create_local_cluster",
           "get_temp_dir", "gpu_device_name", "is_built_with_cuda", "is_built_with_gpu_support", "is_gpu_available", "main", "mock"]
