"""Files, images and MCP resources attached to a user's message.

An :class:`Attachment` is what one attached thing is for the model and for the thread: its ``kind``
(``file``: text, ``image``, ``resource``: an MCP server's resource), ``name``, ``mime`` type, ``size``
and ``sha256`` (of the content as stored), the content itself (``text`` or ``data`` bytes) and where it
came from (``path``, or ``server`` + ``uri``). Made with :meth:`Attachment.from_path` (a file; inside
the opened folder when there is one, through the sandbox), :meth:`~Attachment.from_bytes` (pasted
image data), :meth:`~Attachment.from_text` and :meth:`~Attachment.from_resource` (an MCP resource as
read by ``MCPManager.read_resource``; :func:`read_resource_attachment` does both).

Limits, decided here once:

- text (source, Markdown, logs, JSON…) is sent whole up to :data:`MAX_TEXT_BYTES` (100 KB, about
  30,000 tokens); a larger file is refused with a message naming the limit rather than cut silently, so
  the model never answers about half a file;
- images (PNG, JPEG, GIF, WebP) up to :data:`MAX_IMAGE_BYTES` (20 MB, what hosted models take) go to
  the model as image content parts; a model that cannot see images is refused before anything is sent
  (:func:`check_vision`; ``llm.vision`` in the configuration says it for a model); a local server whose
  vision nobody knows is sent the image with a note;
- PDFs are sent as their extracted text (pypdf), with the same text limit;
- anything else binary is refused, naming what is accepted.

Both size limits are settings: ``attachments.max_text_bytes`` and ``attachments.max_image_bytes`` of the
configuration (:class:`AttachmentLimits` reads them; the window and the command line pass them on), and
``max_text_bytes=`` / ``max_image_bytes=`` of the functions here for the library.

On the wire (:func:`user_content`) the message becomes OpenAI-style content parts: the typed text,
then for each text attachment a text part headed with its name, type and size, for each image a
short text part naming it and an ``image_url`` part with a ``data:`` URL. Both providers send these
parts as they are (litellm translates them for the providers it serves).

In a thread, the content is stored once in the database's ``blobs`` table, keyed by its SHA-256
(:meth:`workspace.persistence.Store.save_attachments`); the ``run_started`` event of the turn carries
only the references (:meth:`Attachment.ref`), so a reopened thread shows the same chips and a
continued conversation sends the same content again.

Standard library only (pypdf is imported when a PDF is attached): importing this module costs nothing.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from workspace.errors import Error
from workspace.readlimits import FileLimitError, describe_size, read_bounded

if TYPE_CHECKING:
    from workspace.providers.base import Provider

__all__ = [
    "IMAGE_MIMES",
    "IMAGE_TOKENS",
    "MAX_IMAGE_BYTES",
    "MAX_TEXT_BYTES",
    "Attachment",
    "AttachmentError",
    "AttachmentKind",
    "AttachmentLimits",
    "check_vision",
    "coerce_attachments",
    "describe_size",
    "has_images",
    "read_resource_attachment",
    "supports_vision",
    "user_content",
    "vision_problem",
    "vision_setting",
    "without_images",
]

AttachmentKind: TypeAlias = Literal["file", "image", "resource"]

#: Text attachments larger than this (bytes) are refused, naming the limit.
MAX_TEXT_BYTES = 100 * 1024
#: Image attachments larger than this (bytes) are refused (hosted models take up to about 20 MB).
MAX_IMAGE_BYTES = 20 * 1024 * 1024
#: The settings that change the two limits, named in the messages of a refusal.
TEXT_LIMIT_KEY = "attachments.max_text_bytes"
IMAGE_LIMIT_KEY = "attachments.max_image_bytes"
#: The setting that says whether a model takes images (see :func:`vision_setting`).
VISION_KEY = "llm.vision"
#: Image types sent to models as image content parts.
IMAGE_MIMES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
#: Tokens one image is counted as in the context window (OpenAI bills a 1024×1024 image at 765 tokens
#: in high detail, Anthropic about 1,600 for a large one: the estimate errs high).
IMAGE_TOKENS = 1_600
PDF_MIME = "application/pdf"

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", PDF_MIME),
)
#: Text types mimetypes may not call ``text/*``.
_TEXT_LIKE = ("json", "xml", "yaml", "toml", "javascript", "x-sh", "x-python", "sql", "csv", "markdown")


class AttachmentError(Error, ValueError):
    """A file or resource that cannot be attached (too large, not text, outside the folder, a model
    that cannot see images); the message names the limit or the fix."""


@dataclass(frozen=True, slots=True)
class AttachmentLimits:
    """How large an attachment may be, in bytes: the configuration's ``attachments.max_text_bytes`` and
    ``attachments.max_image_bytes`` (:meth:`from_config`), given to the functions that make attachments
    as keyword arguments (:meth:`options`). ``max_text_bytes`` None: no limit on text."""

    max_text_bytes: int | None = MAX_TEXT_BYTES
    max_image_bytes: int = MAX_IMAGE_BYTES

    @classmethod
    def from_config(cls, config: Any) -> AttachmentLimits:
        """The limits ``config`` (a :class:`~workspace.config.Config`, or anything with ``get(dotted)``) sets;
        the defaults for what it leaves out, and for None."""
        if config is None:
            return cls()
        text = config.get(TEXT_LIMIT_KEY)
        image = config.get(IMAGE_LIMIT_KEY)
        return cls(max_text_bytes=int(text) if text is not None else MAX_TEXT_BYTES,
                   max_image_bytes=int(image) if image is not None else MAX_IMAGE_BYTES)

    def options(self) -> dict[str, Any]:
        """``max_text_bytes=`` and ``max_image_bytes=`` for :meth:`Attachment.from_path` and the others."""
        return {"max_text_bytes": self.max_text_bytes, "max_image_bytes": self.max_image_bytes}


def _sniff(data: bytes, name: str) -> str:
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    guessed, _ = mimetypes.guess_type(name)
    return guessed or "application/octet-stream"


def _decode_text(data: bytes) -> str | None:
    """The text of ``data`` (UTF-8, with or without a BOM; UTF-16 with a BOM), or None when it is binary."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _redact(text: str) -> str:
    from workspace.secrets import redact

    return redact(text)


@dataclass(frozen=True, slots=True, eq=False)
class Attachment:
    """One attached file, image or resource (see the module docstring)."""

    kind: AttachmentKind
    name: str
    mime: str
    #: Bytes of the content as stored (the text's UTF-8).
    size: int
    #: SHA-256 of the content as stored: the key of its blob in a thread's database.
    sha256: str
    text: str | None = None
    data: bytes | None = None
    #: Where it came from: the file (relative to the opened folder when inside it).
    path: str | None = None
    #: An MCP resource's server and URI.
    server: str | None = None
    uri: str | None = None
    #: What people should know about it ("text extracted from a 3-page PDF").
    note: str | None = None

    # -- making ---------------------------------------------------------------------------------
    @classmethod
    def from_text(cls, text: str, *, name: str, mime: str = "text/plain", path: str | None = None,
                  note: str | None = None, max_text_bytes: int | None = MAX_TEXT_BYTES) -> Attachment:
        """A text attachment (secrets in it are redacted, as everything the thread stores)."""
        clean = _redact(text)
        data = clean.encode("utf-8", "surrogatepass")
        if max_text_bytes is not None and len(data) > max_text_bytes:
            raise AttachmentError(
                f"{name} is {describe_size(len(data))} of text; attachments are sent whole up to "
                f"{describe_size(max_text_bytes)} (about {max_text_bytes // 3_300:,}k tokens). Attach a smaller "
                f"file or the part that matters, or raise the limit: {TEXT_LIMIT_KEY} in the configuration "
                "(in bytes; robotlab paths shows the file)")
        return cls("file", name, mime, len(data), _sha256(data), text=clean, path=path, note=note)

    @classmethod
    def from_bytes(cls, data: bytes, *, name: str, mime: str | None = None, path: str | None = None,
                   max_text_bytes: int | None = MAX_TEXT_BYTES,
                   max_image_bytes: int = MAX_IMAGE_BYTES) -> Attachment:
        """An attachment of ``data``: an image, a PDF's text or a text file, by its content and name."""
        sniffed = _sniff(data, name)  # the content's own signature wins over a name or a given type
        kind = sniffed if sniffed in IMAGE_MIMES or sniffed == PDF_MIME else (mime or sniffed)
        if kind in IMAGE_MIMES:
            if len(data) > max_image_bytes:
                raise AttachmentError(f"{name} is an image of {describe_size(len(data))}; images are sent up to "
                                      f"{describe_size(max_image_bytes)}. Attach a smaller or scaled-down image, "
                                      f"or raise the limit: {IMAGE_LIMIT_KEY} in the configuration (in bytes)")
            return cls("image", name, kind, len(data), _sha256(data), data=bytes(data), path=path)
        if kind == PDF_MIME:
            pdf_text, pages = _pdf_text(data, name)
            return cls.from_text(pdf_text, name=name, mime=PDF_MIME, path=path, max_text_bytes=max_text_bytes,
                                 note=f"text extracted from a {pages}-page PDF")
        if kind.startswith("image/"):
            raise AttachmentError(f"{name} is an image of type {kind}; images are sent as PNG, JPEG, GIF or WebP. "
                                  "Convert it to one of those and attach it again")
        text = _decode_text(data)
        if text is None:
            raise AttachmentError(
                f"{name} is not a text file ({kind}); attachments are text files (UTF-8), PDFs and images "
                "(PNG, JPEG, GIF, WebP). Attach a text export of it instead")
        if not (kind.startswith("text/") or any(t in kind for t in _TEXT_LIKE)):
            kind = "text/plain"
        return cls.from_text(text, name=name, mime=kind, path=path, max_text_bytes=max_text_bytes)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], *, folder: str | os.PathLike[str] | None = None,
                  max_text_bytes: int | None = MAX_TEXT_BYTES, max_image_bytes: int = MAX_IMAGE_BYTES) -> Attachment:
        """The file at ``path``. With a ``folder`` (the opened folder) the path is relative to it, or absolute
        inside it: a path outside is refused by the sandbox (:class:`~workspace.errors.SandboxError`)."""
        if folder is not None:
            from workspace.sandbox import Sandbox

            resolved = Sandbox(folder).resolve(path)
            real, shown = resolved.path, resolved.rel
        else:
            real = Path(path).expanduser().absolute()
            shown = str(real)
        if real.is_dir():
            raise AttachmentError(f"{shown} is a folder; attach the files in it one by one")
        try:
            size = real.stat().st_size
        except FileNotFoundError:
            raise AttachmentError(f"{shown}: no such file; check the path") from None
        except OSError as exc:
            raise AttachmentError(f"{shown} cannot be read: {exc.strerror or exc}") from None
        hard = max(max_image_bytes, (max_text_bytes or 0) * 40, 64 * 1024 * 1024)
        if size > hard:
            raise AttachmentError(f"{shown} is {describe_size(size)}; that is too large to attach (images up to "
                                  f"{describe_size(max_image_bytes)}, text up to "
                                  f"{describe_size(max_text_bytes or MAX_TEXT_BYTES)}: {IMAGE_LIMIT_KEY} and "
                                  f"{TEXT_LIMIT_KEY} in the configuration)")
        try:
            data = read_bounded(real, hard, "attachment")
        except FileLimitError as exc:
            raise AttachmentError(str(exc).replace(str(real), shown, 1)) from None
        except OSError as exc:
            raise AttachmentError(f"{shown} cannot be read: {exc.strerror or exc}") from None
        return cls.from_bytes(data, name=real.name, path=shown, max_text_bytes=max_text_bytes,
                              max_image_bytes=max_image_bytes)

    @classmethod
    def from_resource(cls, server: str, uri: str, contents: Sequence[Mapping[str, Any]], *,
                      max_text_bytes: int | None = MAX_TEXT_BYTES, max_image_bytes: int = MAX_IMAGE_BYTES) -> Attachment:
        """An MCP resource from its ``resources/read`` contents (wire JSON: ``uri``, ``mimeType``, ``text``
        or base64 ``blob``): its text, or its one image."""
        name = uri.rstrip("/").rsplit("/", 1)[-1] or uri
        texts: list[str] = []
        mime = ""
        for content in contents:
            mime = mime or str(content.get("mimeType") or "")
            if "text" in content:
                texts.append(str(content.get("text") or ""))
                continue
            blob = content.get("blob")
            kind = str(content.get("mimeType") or "")
            if isinstance(blob, str) and kind in IMAGE_MIMES and len(contents) == 1:
                data = base64.b64decode(blob)
                if len(data) > max_image_bytes:
                    raise AttachmentError(f"The resource {uri} of '{server}' is an image of {describe_size(len(data))};"
                                          f" images are sent up to {describe_size(max_image_bytes)} ({IMAGE_LIMIT_KEY} "
                                          "in the configuration)")
                return cls("resource", name, kind, len(data), _sha256(data), data=data, server=server, uri=uri)
            if isinstance(blob, str):
                decoded = _decode_text(base64.b64decode(blob))
                if decoded is None:
                    raise AttachmentError(
                        f"The resource {uri} of '{server}' is binary ({kind or 'unknown type'}); only text "
                        "resources and single images can be attached")
                texts.append(decoded)
        if not texts:
            raise AttachmentError(f"The resource {uri} of MCP server '{server}' is empty; nothing to attach")
        text = "\n\n".join(texts)
        made = cls.from_text(text, name=name, mime=mime or "text/plain", max_text_bytes=max_text_bytes)
        return cls("resource", name, made.mime, made.size, made.sha256, text=made.text, server=server, uri=uri)

    # -- the thread's reference -----------------------------------------------------------------
    def ref(self) -> dict[str, Any]:
        """What the ``run_started`` event keeps: everything but the content."""
        out: dict[str, Any] = {"kind": self.kind, "name": self.name, "mime": self.mime, "size": self.size,
                               "sha256": self.sha256}
        for key in ("path", "server", "uri", "note"):
            value = getattr(self, key)
            if value:
                out[key] = value
        return out

    @classmethod
    def from_ref(cls, ref: Mapping[str, Any], content: bytes | None) -> Attachment:
        """Rebuild from :meth:`ref` and the stored content (None: missing from the database, which the text
        then says)."""
        kind = str(ref.get("kind") or "file")
        mime = str(ref.get("mime") or "application/octet-stream")
        is_binary = mime in IMAGE_MIMES
        text: str | None = None
        data: bytes | None = None
        if content is None:
            text = f"[the content of {ref.get('name')} could not be read from the database]"
            is_binary = False
        elif is_binary:
            data = content
        else:
            text = content.decode("utf-8", "surrogatepass")
        return cls(kind if kind in ("file", "image", "resource") else "file",  # type: ignore[arg-type]
                   str(ref.get("name") or "attachment"), mime, int(ref.get("size") or 0), str(ref.get("sha256") or ""),
                   text=text, data=data, path=ref.get("path"), server=ref.get("server"), uri=ref.get("uri"),
                   note=ref.get("note"))

    # -- reading --------------------------------------------------------------------------------
    @property
    def is_image(self) -> bool:
        return self.data is not None and self.mime in IMAGE_MIMES

    def content(self) -> bytes:
        """The content as stored (the text's UTF-8, or the image's bytes)."""
        if self.data is not None:
            return self.data
        return (self.text or "").encode("utf-8", "surrogatepass")

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.content()).decode('ascii')}"

    @property
    def origin(self) -> str:
        """Where it came from, for people: the path, ``server: uri``, or its name."""
        if self.server and self.uri:
            return f"{self.server}: {self.uri}"
        return self.path or self.name

    def header(self) -> str:
        what = "MCP resource" if self.kind == "resource" else "image" if self.is_image else "file"
        where = f" {self.uri} from MCP server '{self.server}'" if self.server else f" {self.path or self.name}"
        note = f"; {self.note}" if self.note else ""
        return f"Attached {what}{where} ({self.mime}, {describe_size(self.size)}{note})"

    def parts(self) -> list[dict[str, Any]]:
        """OpenAI-style content parts for the model."""
        if self.is_image:
            return [{"type": "text", "text": self.header() + ":"},
                    {"type": "image_url", "image_url": {"url": self.data_url()}}]
        return [{"type": "text", "text": f"{self.header()}:\n\n{self.text or ''}\n\n[end of {self.name}]"}]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Attachment):
            return NotImplemented
        return self.ref() == other.ref()

    def __hash__(self) -> int:
        return hash((self.kind, self.sha256, self.name))

    def __repr__(self) -> str:
        return f"Attachment({self.kind}, {self.name!r}, {self.mime}, {describe_size(self.size)})"


AttachmentLike: TypeAlias = "Attachment | str | os.PathLike[str]"


def coerce_attachments(items: Iterable[Any] | None, *, folder: str | os.PathLike[str] | None = None,
                       limits: AttachmentLimits | None = None) -> list[Attachment]:
    """Attachments as given to ``Robot.run(..., attachments=[...])``: :class:`Attachment` objects as they
    are, paths read (inside ``folder`` when given) within ``limits`` (the configuration's, usually). One
    attachment per content: the same file twice is attached once."""
    options = (limits or AttachmentLimits()).options()
    out: list[Attachment] = []
    for item in items or ():
        if isinstance(item, Attachment):
            attachment = item
        elif isinstance(item, str | os.PathLike):
            attachment = Attachment.from_path(item, folder=folder, **options)
        else:
            raise AttachmentError(f"Invalid attachment {item!r}: give a file path or an Attachment "
                                  "(workspace.Attachment.from_path / from_bytes / from_text)")
        if not any(a.sha256 == attachment.sha256 and a.name == attachment.name for a in out):
            out.append(attachment)
    return out


def user_content(text: str, attachments: Sequence[Attachment]) -> str | list[dict[str, Any]]:
    """The user message's content for the model: ``text`` alone, or content parts (the text, then each
    attachment's parts)."""
    if not attachments:
        return text
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for attachment in attachments:
        parts += attachment.parts()
    return parts


# -- vision -----------------------------------------------------------------------------------------
def _has_image(message: Any) -> bool:
    return (getattr(message, "is_user", False) and isinstance(message.content, list)
            and any(isinstance(p, Mapping) and p.get("type") == "image_url" for p in message.content))


_HAS_IMAGES: Any = None


def has_images(messages: Sequence[Any]) -> bool:
    """Whether any user message of ``messages`` has an image part (a conversation asked again one turn
    longer: only its new messages are looked at, :class:`workspace.messages.GrowingFold`)."""
    global _HAS_IMAGES
    if not isinstance(messages, list | tuple):
        return any(_has_image(m) for m in messages)
    if _HAS_IMAGES is None:
        from workspace.messages import GrowingFold

        _HAS_IMAGES = GrowingFold(False, lambda found, message: found or _has_image(message), kept=2)
    return bool(_HAS_IMAGES(messages))


def without_images(messages: Sequence[Any]) -> list[Any]:
    """``messages`` with every image part replaced by a line saying it is not shown (for a model that
    cannot see images, after a switch of model in a thread that has some)."""
    from workspace.messages import TextMessage

    out: list[Any] = []
    for message in messages:
        content = message.content
        if getattr(message, "is_user", False) and isinstance(content, list):
            parts = [{"type": "text", "text": "[an image was attached here; this model does not take images]"}
                     if isinstance(p, Mapping) and p.get("type") == "image_url" else p for p in content]
            message = TextMessage(role="user", content=parts)
        out.append(message)
    return out


def supports_vision(provider: Provider) -> bool | None:
    """Whether ``provider``'s model takes images: True, False, or None when nobody knows (a local server;
    a provider that does not say). May import litellm: call it off the event loop."""
    try:
        answer = provider.supports_vision()
    except Exception:  # a provider that cannot tell: as unknown
        return None
    return None if answer is None else bool(answer)


def vision_setting(value: Any, model: str | None) -> bool | None:
    """Whether ``llm.vision`` (``value``) says ``model`` takes images: true or false for every model, or a
    mapping of model ids (also without the provider's prefix, as ``llm.context_window``) to true or false;
    None when it does not say."""
    if isinstance(value, bool):
        return value
    if isinstance(value, Mapping) and model:
        bare = model.split("/", 1)[1] if "/" in model else model
        for key in (model, bare):
            found = value.get(key)
            if isinstance(found, bool):
                return found
    return None


def vision_problem(provider: Provider, attachments: Sequence[Attachment]) -> tuple[str | None, str | None]:
    """``(error, note)`` for sending ``attachments`` to ``provider``'s model: an error when it has images
    and the model is known not to see them; a note when nobody knows (a local server). May import litellm:
    call it off the event loop."""
    images = [a for a in attachments if a.is_image]
    if not images:
        return None, None
    answer = supports_vision(provider)
    model = provider.label or provider.model_id or "the model"
    names = ", ".join(a.name for a in images)
    if answer is False:
        return (f"{model} does not take images, so {names} was not sent. Remove the image, or choose a model that "
                "supports vision (for example openai/gpt-4o-mini or anthropic/claude-sonnet-4-5); if this one does, "
                f"say so in the configuration: {VISION_KEY}: true"), None
    if answer is None and provider.is_language_model:
        return None, (f"Whether {model} takes images is not known (its server does not say): {names} is sent as an "
                      "image; if the server refuses it, load a vision model (for example llava or qwen2.5-vl). "
                      f"{VISION_KEY}: true or false in the configuration says it")
    return None, None


def check_vision(provider: Provider, attachments: Sequence[Attachment]) -> str | None:
    """Raise :class:`AttachmentError` when the model cannot see the images attached; return the note to
    show when nobody knows (see :func:`vision_problem`)."""
    error, note = vision_problem(provider, attachments)
    if error:
        raise AttachmentError(error)
    return note


# -- MCP resources ------------------------------------------------------------------------------------
async def read_resource_attachment(manager: Any, server: str, uri: str, *,
                                   max_text_bytes: int | None = MAX_TEXT_BYTES,
                                   max_image_bytes: int = MAX_IMAGE_BYTES) -> Attachment:
    """Read one resource through ``manager`` (an :class:`~workspace.mcp.MCPManager`: ``read_resource(server,
    uri)`` gives the ``resources/read`` result as wire JSON) and make it an attachment."""
    try:
        result = await manager.read_resource(server, uri)
    except AttachmentError:
        raise
    except Exception as exc:
        raise AttachmentError(f"Could not read the resource {uri} of MCP server '{server}': {exc}. Check that the "
                              "server is running (the MCP dock shows its state)") from exc
    contents = result.get("contents") if isinstance(result, Mapping) else None
    return Attachment.from_resource(server, uri, list(contents or []), max_text_bytes=max_text_bytes,
                                    max_image_bytes=max_image_bytes)


def _pdf_text(data: bytes, name: str) -> tuple[str, int]:
    """The text of a PDF (pypdf), and its page count."""
    try:
        import io

        from pypdf import PdfReader
    except ImportError:  # pragma: no cover - pypdf is a dependency
        raise AttachmentError(f"{name} is a PDF and PDF support (pypdf) is not installed; install it "
                              "(pip install pypdf) or attach a text export") from None
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise AttachmentError(f"{name} is an encrypted PDF; attach an unprotected copy or a text export")
        pages = [page.extract_text() or "" for page in reader.pages]
    except AttachmentError:
        raise
    except Exception as exc:
        raise AttachmentError(f"{name}: the PDF's text could not be read ({exc}); attach a text export") from exc
    text = "\n\n".join(p.strip() for p in pages).strip()
    if not text:
        raise AttachmentError(f"{name} is a PDF without text (a scan?); attach its pages as images instead")
    return text, len(pages)
