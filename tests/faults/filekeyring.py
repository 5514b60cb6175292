"""A keyring backend that keeps passwords in a JSON file (``$FILE_KEYRING``), for tests that run
the command line in a subprocess: ``PYTHON_KEYRING_BACKEND=filekeyring.FileKeyring``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend


class FileKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    @property
    def path(self) -> Path:
        return Path(os.environ["FILE_KEYRING"])

    def _items(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._items().get(f"{service}/{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        items = self._items()
        items[f"{service}/{username}"] = password
        self.path.write_text(json.dumps(items), encoding="utf-8")

    def delete_password(self, service: str, username: str) -> None:
        items = self._items()
        items.pop(f"{service}/{username}", None)
        self.path.write_text(json.dumps(items), encoding="utf-8")
