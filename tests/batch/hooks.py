"""Preprocessing hooks the Ray tests ship to actors (pickled by value): image HWC uint8 -> NCHW float, a killer."""
import os
import signal

import numpy as np


def image_to_input(batch):
    """Images [N, H, W, 3] uint8 -> input [N, 3, H, W] float32 in [0, 1]."""
    batch = dict(batch)
    batch["input"] = np.stack(list(batch["image"])).transpose(0, 3, 1, 2).astype(np.float32) / 255.0
    return batch


class KillOnce:
    """SIGKILLs the actor process the first time a batch holds row id `at` (the marker file makes it once)."""

    def __init__(self, marker, at):
        self.marker, self.at = marker, at

    def __call__(self, batch):
        if self.at in batch["id"]:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return batch
            os.kill(os.getpid(), signal.SIGKILL)
        return batch
