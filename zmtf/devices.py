"""``python -m zmtf.devices``: print the devices this process sees, as TF names them."""

import logging
import sys

from zmtf.runtime.gpus import list_local_devices

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="I %(name)s] %(message)s")
    for line in list_local_devices():
        print(line)
