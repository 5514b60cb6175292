"""Where the workspace keeps its files, by the platform's conventions.

``ROBOTLAB_HOME`` overrides everything (tests and portable installs use it):
config, data, logs and cache then live in sub-folders of that one directory.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "robotlab"


def _home() -> Path | None:
    value = os.environ.get("ROBOTLAB_HOME")
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    home = _home()
    if home:
        return home / "config"
    import platformdirs

    return Path(platformdirs.user_config_path(APP_NAME))


def data_dir() -> Path:
    home = _home()
    if home:
        return home / "data"
    import platformdirs

    return Path(platformdirs.user_data_path(APP_NAME))


def log_dir() -> Path:
    home = _home()
    if home:
        return home / "logs"
    import platformdirs

    return Path(platformdirs.user_log_path(APP_NAME))


def cache_dir() -> Path:
    home = _home()
    if home:
        return home / "cache"
    import platformdirs

    return Path(platformdirs.user_cache_path(APP_NAME))


def user_config_file() -> Path:
    return config_dir() / "config.yaml"


def approval_policy_file() -> Path:
    return config_dir() / "approval.yaml"


def database_path() -> Path:
    return data_dir() / "workspace.db"


def user_robots_dir() -> Path:
    return config_dir() / "robots"


def user_templates_dir() -> Path:
    return config_dir() / "templates"


def user_networks_dir() -> Path:
    return config_dir() / "networks"


def project_dir(folder: Path) -> Path:
    return Path(folder) / ".robotlab"


def project_config_file(folder: Path) -> Path:
    return project_dir(folder) / "config.yaml"


def resources_dir() -> Path:
    """The shipped ``resources`` package, found through importlib.resources."""
    from importlib.resources import files

    return Path(str(files("resources")))


def all_paths() -> dict[str, Path]:
    """Every location people may want to know (``robotlab paths``, the About dialog)."""
    return {
        "config": config_dir(),
        "config file": user_config_file(),
        "approval policy": approval_policy_file(),
        "robots": user_robots_dir(),
        "templates": user_templates_dir(),
        "networks": user_networks_dir(),
        "data": data_dir(),
        "database": database_path(),
        "logs": log_dir(),
        "cache": cache_dir(),
        "resources": resources_dir(),
    }
