"""Where the workspace keeps its files, by the platform's conventions.

``ROBOTLAB_HOME`` overrides everything (tests and portable installs use it):
config, data, logs and cache then live in sub-folders of that one directory.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "robotlab"


#: The environment variables the platform's folders are found from (platformdirs reads these).
_PLATFORM_VARIABLES = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
                       "APPDATA", "LOCALAPPDATA", "USERPROFILE")
#: The platform's config folder by those variables' values (a run asks for it every time; platformdirs'
#: look-up is slow): looked up again when one of them changes. Bounded.
_CONFIG_DIRS: dict[tuple[object, ...], Path] = {}


#: The variables' names as ``os.environ`` keeps them (encoded), by the names asked for.
_ENCODED: dict[tuple[str, ...], tuple[object, ...]] = {}


def env_values(names: tuple[str, ...]) -> tuple[object, ...]:
    """The values of the environment variables ``names`` as a key (None for one not set; a value as ``os.environ``
    keeps it: bytes on POSIX, to compare, test or decode with ``os.environ.get``): read from ``os.environ``'s own
    table, since ``os.environ.get`` of a variable not set costs an exception."""
    data = getattr(os.environ, "_data", None)
    keys = _ENCODED.get(names)
    if keys is None:
        encode = getattr(os.environ, "encodekey", None)
        keys = _ENCODED[names] = tuple(encode(name) for name in names) if callable(encode) else ()
    if isinstance(data, dict) and len(keys) == len(names):
        return tuple(map(data.get, keys))
    return tuple(os.environ.get(name) for name in names)


def _home() -> Path | None:
    if env_values(("ROBOTLAB_HOME",))[0] is None:
        return None
    value = os.environ.get("ROBOTLAB_HOME")
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    home = _home()
    if home:
        return home / "config"
    key = env_values(_PLATFORM_VARIABLES)
    found = _CONFIG_DIRS.get(key)
    if found is None:
        import platformdirs

        if len(_CONFIG_DIRS) >= 16:
            _CONFIG_DIRS.clear()
        found = _CONFIG_DIRS[key] = Path(platformdirs.user_config_path(APP_NAME))
    return found


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
