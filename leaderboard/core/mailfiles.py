"""Mail as files: the backend used when ``EMAIL_URL`` is unset.

Each message becomes one ``.eml`` file in ``EMAIL_FILE_PATH`` (``$DATA_DIR/mail/``), named
by the time it was sent, which any mail program opens. Django's own file backend appends
every message of a connection to one log file instead.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.core.mail.backends.base import BaseEmailBackend
from django.utils import timezone


class EmlFileBackend(BaseEmailBackend):
    def __init__(self, *args, file_path=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.folder = Path(file_path or settings.EMAIL_FILE_PATH)

    def send_messages(self, email_messages) -> int:
        if not email_messages:
            return 0
        self.folder.mkdir(parents=True, exist_ok=True)
        sent = 0
        for message in email_messages:
            data = message.message().as_bytes(linesep="\r\n")
            name = f"{timezone.now():%Y%m%d-%H%M%S-%f}-{secrets.token_hex(3)}.eml"
            partial = self.folder / f".{name}.partial"
            try:
                partial.write_bytes(data)
                os.replace(partial, self.folder / name)  # readers never see half a message
            except OSError:
                partial.unlink(missing_ok=True)
                if not self.fail_silently:
                    raise
                continue
            sent += 1
        return sent
