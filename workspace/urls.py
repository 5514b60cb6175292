"""Addresses of model servers: which are on this machine, and where local servers listen.

A leaf module (standard library only): the configuration, folder trust and the providers all
ask these questions, and none of them should have to import the others to do so.
"""

from __future__ import annotations

__all__ = ["LOCAL_DEFAULT_BASES", "is_loopback_url", "without_credentials"]

#: Where local servers listen when no ``api_base`` is given (litellm's defaults), by model prefix.
LOCAL_DEFAULT_BASES = {"ollama": "http://localhost:11434", "ollama_chat": "http://localhost:11434",
                       "lm_studio": "http://localhost:1234/v1", "lmstudio": "http://localhost:1234/v1",
                       "llamafile": "http://localhost:8080/v1"}


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` (or a bare ``host:port``) points at this machine: localhost or a loopback address."""
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
