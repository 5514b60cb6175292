"""Addresses of model servers: which are on this machine, where local servers listen, and which
may get the user's API keys (:func:`key_may_go`, see :mod:`workspace.trust`).

A leaf module (standard library only): the configuration, folder trust and the providers all
ask these questions, and none of them should have to import the others to do so.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["LOCAL_DEFAULT_BASES", "Settings", "is_loopback_url", "key_may_go", "normal_base", "user_api_bases",
           "without_credentials", "written_in_folder"]

#: Where local servers listen when no ``api_base`` is given (litellm's defaults), by model prefix.
LOCAL_DEFAULT_BASES = {"ollama": "http://localhost:11434", "ollama_chat": "http://localhost:11434",
                       "lm_studio": "http://localhost:1234/v1", "lmstudio": "http://localhost:1234/v1",
                       "llamafile": "http://localhost:8080/v1"}


@functools.lru_cache(maxsize=256)  # asked a few times per model call of the same few addresses (~0.2 ms each)
def is_loopback_url(url: str) -> bool:
    """Whether ``url`` (or a bare ``host:port``) points at this machine: localhost or a loopback address.
    Remembered by address: a provider asks on every request (its slots, its key, its errors)."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(url if "//" in url else f"//{url}").hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def probe_opener(url: str) -> Any:
    """The ``urllib`` opener a probe of ``url`` goes through (a server's model list, its context window): a
    server on this machine is asked directly, never through a proxy of the environment, and no redirect is
    followed (a 3xx is the answer, as ``HTTPError``): a probe reaches the address configured and no other."""
    import urllib.request

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    handlers: list[Any] = [_NoRedirect()]
    if is_loopback_url(url):
        handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(*handlers)


class Settings(Protocol):
    """What these questions read of a configuration (:class:`workspace.config.Config`, or a view of one):
    ``get(dotted)``; and, when it has them, ``sources``, ``folder`` and ``user_api_bases``."""

    def get(self, dotted: str, default: Any = None) -> Any: ...


def normal_base(url: object) -> str:
    """An ``api_base`` as compared: without credentials (:func:`without_credentials`), scheme and host
    lower-case, no trailing slash and no trailing ``/v1`` (``http://h:8080/v1`` and ``http://h:8080`` are
    one server: OpenAI-style clients append ``/v1`` or not)."""
    from urllib.parse import urlsplit, urlunsplit

    text = without_credentials(str(url).strip()) or str(url).strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        return text.rstrip("/")
    path = parts.path.rstrip("/")
    if path.lower().endswith("/v1"):
        path = path[:-3].rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def from_folder_config(config: Settings | None, dotted: str) -> bool:
    """Whether ``config``'s value of ``dotted`` comes from the opened folder's ``.robotlab/config.yaml``."""
    sources = getattr(config, "sources", None)
    folder = getattr(config, "folder", None)
    if not isinstance(sources, Mapping) or folder is None:
        return False
    source = sources.get(dotted)
    return isinstance(source, str) and written_in_folder(source, folder)  # its .robotlab/config.yaml


def user_api_bases(config: Settings | None) -> set[str]:
    """The ``api_base`` addresses the user configured: their own file (Settings writes it), ``ROBOT_LAB_``
    variables and arguments (``--api-base``) (``Config.user_api_bases``), and ``llm.api_base`` unless it comes
    from the opened folder."""
    found: set[str] = set()
    found.update(normal_base(b) for b in getattr(config, "user_api_bases", ()) or () if b)
    if config is not None:
        value = config.get("llm.api_base")
        if value and not from_folder_config(config, "llm.api_base"):
            found.add(normal_base(value))
    return found


def written_in_folder(path: Any, folder: Any) -> bool:
    """Whether the file at ``path`` is inside the opened ``folder`` (its settings are the folder's, not the user's)."""
    if path is None or folder is None:
        return False
    import os

    real, root = os.path.realpath(os.fspath(path)), os.path.realpath(os.fspath(folder))
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def key_may_go(api_base: str | None, *, config: Settings | None = None, folder_written: bool = False) -> bool:
    """Whether a request to ``api_base`` may carry the user's API key (environment or keyring).

    Yes for the provider's own address (no ``api_base``) and for an address the user configured
    (:func:`user_api_bases`). No for an address written in a file of the opened folder
    (``folder_written``: a robot's or network's ``api_base``), nor for ``llm.api_base`` when the folder's
    ``.robotlab/config.yaml`` set it (trusted or not), unless the user configured the same address.
    Addresses are compared as :func:`normal_base` spells them."""
    if not api_base:
        return True
    base = normal_base(api_base)
    if base in user_api_bases(config):
        return True
    if folder_written:
        return False
    if config is not None and from_folder_config(config, "llm.api_base"):
        value = config.get("llm.api_base")
        if value and normal_base(value) == base:
            return False
    return True


_SECRET_PARAM = ("key", "token", "secret", "password", "sig", "auth")


def without_credentials(url: str) -> str:
    """``url`` without what could be a credential (a user name and password, a ``?key=``/``?token=``-like
    query parameter): what may be stored with a thread to find its server again (never a key)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    netloc = parts.netloc.rpartition("@")[2]
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
             if not any(word in k.lower().replace("-", "").replace("_", "") for word in _SECRET_PARAM)]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), ""))
