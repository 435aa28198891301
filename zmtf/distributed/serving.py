"""What a process that only serves does: run a Server until SIGINT/SIGTERM.

``python -m zmtf.server`` and the estimator's "ps" task (estimator/training.py) both end here;
it lives in the distributed layer so that the estimator does not import a command-line module.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any


def serve_until_signalled(server: Any) -> None:
    """Serve until SIGINT/SIGTERM (or ``server.stop()``), then return with the server stopped.

    Signal handlers can only be set from the main thread; elsewhere only stop() ends it.
    """
    def shutdown(signum: int, _frame: object) -> None:
        logging.getLogger("zmtf.server").info("signal %d: stopping", signum)
        server.stop()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, shutdown)
        signal.signal(signal.SIGTERM, shutdown)
    # the process was tuned for serving when the server started (process_tuning.py)
    server.join()


__all__ = ["serve_until_signalled"]
