"""Seed chapter, "Managing the GPU RAM": per_process_gpu_memory_fraction = 0.4.

"Two programs like this can run in parallel on the same GPU card (but not three, since
3 x 0.4 > 1)." This starts the seed's program three times, each in its own process, and
keeps the first two running while the third starts: the third gets ResourceExhaustedError.
Run it on a GPU machine, or on a CPU with numba's simulated card:
    NUMBA_ENABLE_CUDASIM=1 ZMTF_CUDASIM_GPUS=1 python examples/seed_memory_fraction.py
"""

import os
import subprocess
import sys
import tempfile

PROGRAM = """
import sys
import zmtf as tf

config = tf.ConfigProto()
config.gpu_options.per_process_gpu_memory_fraction = 0.4
try:
    session = tf.Session(config=config)
except tf.errors.ResourceExhaustedError as error:
    print("ResourceExhaustedError:", error.message.split(": ", 1)[1], flush=True)
    sys.exit(0)
gpus = [d.name for d in session.list_devices() if d.device_type == "GPU"]
print("running with 40% of", gpus[0] if gpus else "no GPU", flush=True)
sys.stdin.read()   # hold the share until the parent says stop
session.close()
"""


def main() -> None:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as ledger:
        # a simulated card only takes part in the ledger when one is named (see gpu_ledger.py)
        env.setdefault("ZMTF_GPU_LEDGER_DIR", ledger)
        programs = []
        for n in range(3):
            program = subprocess.Popen([sys.executable, "-c", PROGRAM], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True, env=env)
            print(f"program {n + 1}:", program.stdout.readline().strip(), flush=True)
            programs.append(program)
        for program in programs:
            program.communicate("")


if __name__ == "__main__":
    main()
