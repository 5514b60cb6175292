"""Robots that talk: RobotLab's message bus (``RobotMessage``, ``send_message``, ``on_message``, ``spawn``).

A :class:`MessageBus` has one channel per robot, named after the robot. A message published to a
channel becomes a :class:`Delivery` that the robot's handler acknowledges (``ack``) or refuses
(``nack``; refused deliveries are kept in :attr:`MessageBus.dead_letters`). Deliveries to one robot
are handled one at a time, in order, by a task of the channel's own: the sender never waits for the
handler (RobotLab handles a delivery inline in the sender when the robot is idle; a long run inside
a handler blocked the sender there, not here). A handler's failure is logged and never reaches the
sender.

:class:`BusMessaging` is the part of :class:`~workspace.robot.Robot` that talks: ``robot.bus``,
``with_bus``, ``send_message`` / ``send_reply``, ``on_message``, the ``outbox`` with its replies,
``respond_to_tasks``, ``serve``, ``spawn`` and ``delegate`` (:mod:`workspace.delegation`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Self, overload

from workspace.delegation import DelegationFuture, delegate
from workspace.errors import Error

if TYPE_CHECKING:
    from workspace.result import RobotResult

log = logging.getLogger(__name__)


class BusError(Error):
    """A bus operation that cannot happen: no bus, an unknown recipient, a handler that failed."""


@dataclass(frozen=True, slots=True)
class RobotMessage:
    """One message on the bus. ``id`` is the sender's counter (from 1), ``from_`` the sender's name
    (``from`` on the wire: :meth:`to_dict`), ``content`` a string or a mapping, ``in_reply_to`` the
    :attr:`key` of the message this one answers."""

    id: int
    from_: str
    content: str | Mapping[str, Any]
    in_reply_to: str | None = None

    @classmethod
    def build(cls, *, id: int, from_: str, content: str | Mapping[str, Any],
              in_reply_to: str | None = None) -> RobotMessage:
        return cls(id=id, from_=str(from_), content=content, in_reply_to=in_reply_to)

    @property
    def key(self) -> str:
        """``"<from>:<id>"``: what a reply names in ``in_reply_to``."""
        return f"{self.from_}:{self.id}"

    @property
    def reply(self) -> bool:
        """RobotLab's ``reply?``: this message answers another."""
        return self.in_reply_to is not None

    def to_dict(self) -> dict[str, Any]:
        """The wire form: ``{"id", "from", "content", "in_reply_to"}``."""
        content = dict(self.content) if isinstance(self.content, Mapping) else self.content
        return {"id": self.id, "from": self.from_, "content": content, "in_reply_to": self.in_reply_to}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RobotMessage:
        """Read the wire form back (``from``; ``from_`` is accepted too)."""
        sender = data.get("from", data.get("from_"))
        if sender is None or "id" not in data or "content" not in data:
            raise ValueError("A RobotMessage needs 'id', 'from' and 'content' (got keys: "
                             f"{', '.join(sorted(map(str, data))) or 'none'})")
        return cls(id=int(data["id"]), from_=str(sender), content=data["content"],
                   in_reply_to=data.get("in_reply_to"))


DeliveryStatus = Literal["pending", "acked", "nacked"]


class Delivery:
    """A message as one robot received it: acknowledge it (:meth:`ack`) or refuse it (:meth:`nack`)."""

    def __init__(self, message: RobotMessage, *, to: str, bus: MessageBus) -> None:
        self.message = message
        self.to = to
        self.status: DeliveryStatus = "pending"
        #: True once the recipient's handler returned (or the delivery was dropped with its channel).
        self.handled = False
        #: Why the recipient's handler failed (None: it did not, or has not run yet).
        self.error: str | None = None
        #: The tool call that sent it (a model's ``send_message``), when one did: the answer's run runs inside it.
        self.origin: Any = None
        self._bus = bus
        self._handled_event: asyncio.Event | None = None

    @property
    def pending(self) -> bool:
        """Neither acknowledged nor refused yet."""
        return self.status == "pending"

    def ack(self) -> None:
        if self.pending:
            self.status = "acked"

    def nack(self) -> None:
        """Refuse the message: it goes to the bus's :attr:`~MessageBus.dead_letters`."""
        if self.pending:
            self.status = "nacked"
            self._bus.dead_letters.append(self)

    def _mark_handled(self) -> None:
        self.handled = True
        if self._handled_event is not None:
            self._handled_event.set()

    async def wait_handled(self, *, timeout: float | None = None) -> bool:
        """Wait until the recipient's handler returned (at most ``timeout`` seconds); False when the time ran
        out first. Called on the loop the bus runs on."""
        if not self.handled:
            if self._handled_event is None:
                self._handled_event = asyncio.Event()
            try:
                async with asyncio.timeout(timeout):
                    await self._handled_event.wait()
            except TimeoutError:
                return self.handled
        return True

    def __repr__(self) -> str:
        return f"<Delivery {self.message.key} -> {self.to} {self.status}>"


Handler = Callable[[Delivery], Awaitable[None] | None]
#: Told of every delivery as it is published (a network run turns each into a ``bus_message`` event).
Observer = Callable[[Delivery], None]


class _Channel:
    def __init__(self, name: str) -> None:
        self.name = name
        self.queue: deque[Delivery] = deque()
        self.handler: Handler | None = None
        self.consumer: asyncio.Task[None] | None = None


class MessageBus:
    """Channels by robot name; publishing never waits for the recipient.

    A robot's tool may send from a worker thread: the delivery is handed to the event loop the bus
    runs on.
    """

    def __init__(self) -> None:
        self._channels: dict[str, _Channel] = {}
        self._lock = threading.Lock()
        self._pending = 0
        self._idle: asyncio.Event | None = None
        self._idle_loop: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Deliveries a handler refused (``nack``), oldest first.
        self.dead_letters: list[Delivery] = []
        self._observers: list[Observer] = []
        #: Robots with a run going that shows its messages (:func:`watch_run`), by name: how many such runs.
        self._watched: dict[str, int] = {}
        #: The bus's name when robot files named it (:func:`named_bus`); None for a bus made in code.
        self.name: str | None = None

    def add_observer(self, observer: Observer) -> Callable[[], None]:
        """``observer(delivery)`` is called for every message published from now on, in the publisher's
        thread, before the recipient sees it; returns the function that removes it. An observer's error is
        logged and never reaches the sender."""
        self._observers.append(observer)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._observers.remove(observer)

        return remove

    @property
    def channels(self) -> list[str]:
        return list(self._channels)

    def has_channel(self, name: str) -> bool:
        return name in self._channels

    def add_channel(self, name: str) -> None:
        self._channels.setdefault(name, _Channel(name))
        self._running_loop()

    def _running_loop(self) -> asyncio.AbstractEventLoop | None:
        """The running event loop, remembered as the bus's (None outside one)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return None
        self._loop = running
        return running

    def remove_channel(self, name: str) -> None:
        """Take channel ``name`` off the bus; what was still queued for it is refused (``nack``)."""
        channel = self._channels.pop(name, None)
        if channel is None:
            return
        if channel.consumer is not None:
            channel.consumer.cancel()
        while channel.queue:
            dropped = channel.queue.popleft()
            dropped.nack()
            dropped._mark_handled()
            self._done_one()

    def subscriber(self, name: str) -> Handler | None:
        """The handler of channel ``name`` (None: no such channel, or nobody handles it)."""
        channel = self._channels.get(name)
        return channel.handler if channel is not None else None

    def subscribe(self, name: str, handler: Handler) -> None:
        """``handler(delivery)`` receives every delivery to channel ``name``, one at a time."""
        self.add_channel(name)
        self._channels[name].handler = handler

    def publish(self, to: str, message: RobotMessage, *, origin: Any = None) -> Delivery:
        """Queue ``message`` for channel ``to`` and return at once. Outside any event loop the bus has run
        on, the delivery waits in the queue until :meth:`drain` (or a later publish inside a loop) starts it."""
        channel = self._channels.get(str(to))
        if channel is None:
            known = ", ".join(sorted(self._channels)) or "none"
            raise BusError(f"No robot named '{to}' is on this bus (on it: {known}); put it on the bus first "
                           "with robot.with_bus(bus)")
        delivery = Delivery(message, to=channel.name, bus=self)
        delivery.origin = origin
        for observer in list(self._observers):
            try:
                observer(delivery)
            except Exception as exc:  # an observer's failure never reaches the sender
                log.warning("bus: observer error: %s", exc)
        with self._lock:
            self._pending += 1
            channel.queue.append(delivery)
        if self._running_loop() is not None:
            self._start(channel)
        elif self._loop is not None and not self._loop.is_closed():  # a worker thread: over to the loop
            self._loop.call_soon_threadsafe(self._start, channel)
        return delivery

    def _start(self, channel: _Channel) -> None:
        loop = asyncio.get_running_loop()
        running = channel.consumer
        if running is not None and not running.done() and running.get_loop() is loop:
            return
        if self._channels.get(channel.name) is not channel:
            return
        channel.consumer = loop.create_task(self._consume(channel), name=f"bus channel {channel.name}")

    async def _consume(self, channel: _Channel) -> None:
        while channel.queue:
            delivery = channel.queue.popleft()
            try:
                handler = channel.handler
                if handler is None:
                    delivery.ack()
                else:
                    outcome = handler(delivery)
                    if inspect.isawaitable(outcome):
                        await outcome
            except Exception as exc:  # a handler's failure stays on the bus: the sender never sees it
                delivery.nack()
                delivery.error = str(exc) or type(exc).__name__
                log.warning("bus: delivery error: %s", exc)
            finally:
                delivery._mark_handled()
                self._done_one()

    def _done_one(self) -> None:
        with self._lock:
            self._pending -= 1
            idle = self._pending == 0
        if idle and self._idle is not None:
            self._idle.set()

    @property
    def busy(self) -> bool:
        """Deliveries are queued or being handled."""
        return self._pending > 0

    async def drain(self, *, timeout: float | None = None) -> None:
        """Wait until every delivery, and every one its handlers published in turn, has been handled
        (``TimeoutError`` after ``timeout`` seconds)."""
        self._loop = asyncio.get_running_loop()
        for channel in list(self._channels.values()):
            if channel.queue:
                self._start(channel)
        if self._idle is None or self._idle_loop is not self._loop:  # an Event belongs to one event loop
            self._idle, self._idle_loop = asyncio.Event(), self._loop
        async with asyncio.timeout(timeout):
            while self.busy:
                self._idle.clear()
                if not self.busy:
                    break
                await self._idle.wait()

    def __repr__(self) -> str:
        return f"<MessageBus channels={self.channels!r}>"


_named: weakref.WeakValueDictionary[str, MessageBus] = weakref.WeakValueDictionary()
_named_lock = threading.Lock()


def named_bus(name: str) -> MessageBus:
    """The process's bus called ``name`` (a robot file's ``bus: name``): every robot that names it shares it;
    made on first use, gone once no robot is on it."""
    with _named_lock:
        bus = _named.get(name)
        if bus is None:
            bus = _named[name] = MessageBus()
            bus.name = name
        return bus


@dataclass
class OutboxEntry:
    """A message this robot sent, whether it was answered (``status``) and the replies."""

    message: RobotMessage
    status: Literal["sent", "replied"] = "sent"
    replies: list[RobotMessage] = field(default_factory=list)


MessageHandler = Callable[..., Any]


def _owner(bus: MessageBus, name: str) -> Any:
    """The robot whose handler holds channel ``name`` of ``bus`` (None: no channel, or not a robot's)."""
    return getattr(bus.subscriber(name), "__self__", None)


def _wants_delivery(handler: MessageHandler) -> bool:
    """RobotLab's arity rule: a handler of two parameters gets ``(delivery, message)`` and acknowledges
    itself; a handler of one gets the message, acknowledged before the call."""
    try:
        params = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def _as_text(content: str | Mapping[str, Any]) -> str:
    if isinstance(content, Mapping):
        return "\n".join(f"{k}: {v}" for k, v in content.items())
    return str(content)


class _Talk:
    """One robot's state on the bus."""

    def __init__(self) -> None:
        self.bus: MessageBus | None = None
        self.counter = 0
        self.lock = threading.Lock()
        self.outbox: dict[str, OutboxEntry] = {}
        self.handler: MessageHandler = lambda message: None
        #: Given a handler of its own (``on_message``, ``serve``); the file's bus not joined yet (``_join_bus``).
        self.listening = self.joining = False
        self.children: dict[str, Any] = {}


class BusMessaging:
    """The messaging half of a robot (mixed into :class:`~workspace.robot.Robot`)."""

    name: str

    @property
    def _talk(self) -> _Talk:
        talk: _Talk | None = self.__dict__.get("_talk_state")
        if talk is None:
            talk = self.__dict__["_talk_state"] = _Talk()
        return talk

    @property
    def bus(self) -> MessageBus | None:
        """The bus this robot is on (None: not on one)."""
        return self._talk.bus

    def with_bus(self, bus: MessageBus | None = None) -> Self:
        """Put this robot on ``bus`` (None: keep its bus, or make a new one) and return the robot. It leaves
        the bus it was on."""
        talk = self._talk
        if talk.joining:
            if bus is None or bus is talk.bus:
                self._join_bus()
                return self
            talk.joining, talk.bus = False, None  # never joined: nothing to leave
        target = bus if bus is not None else (talk.bus or MessageBus())
        if talk.bus is target and target.has_channel(self.name):
            return self
        if target.has_channel(self.name):
            raise BusError(f"Another robot named '{self.name}' is already on this bus: messages are addressed by "
                           "name, so give this robot a name of its own")
        if talk.bus is not None and talk.bus is not target:
            talk.bus.remove_channel(self.name)
        talk.bus = target
        target.subscribe(self.name, self._receive)
        return self

    def disconnect(self) -> Self:
        """RobotLab's ``disconnect``: leave this robot's channel on its bus and return the robot. What was still
        queued for it is refused (``nack``) and a message sent to it now fails naming ``with_bus``; the robot
        still knows its bus (:attr:`bus`, ``to_dict()["bus"]``) and can send on it, and ``with_bus()`` joins it
        again. Not on a bus: nothing happens. (RobotLab's also disconnects the robot's MCP clients; here the
        servers belong to the workspace's manager, shared by every robot, and stay up.)"""
        talk = self._talk
        if talk.joining:  # never joined: the channel of that name is not this robot's
            talk.joining = False
            return self
        bus = talk.bus
        if bus is not None and _owner(bus, self.name) in (self, None):
            bus.remove_channel(self.name)
        return self

    def _name_bus(self, bus: MessageBus) -> None:
        """A robot file's ``bus: name``: the robot is on ``bus`` (it can send, :attr:`bus` is it) but joins its
        name's channel only when it first runs, listens (``on_message``, ``serve``) or sends, so building a robot
        from its file (to read its model, say) leaves the bus as it was."""
        talk = self._talk
        talk.bus, talk.joining = bus, True

    def _join_bus(self, *, replace: bool = False) -> None:
        """Join the channel of the bus the robot's file named (:meth:`_name_bus`), once, unless a robot of the
        name that listens holds it (it keeps it, unless ``replace``); one that does not listen gives it up."""
        talk = self._talk
        if not talk.joining or talk.bus is None:
            return
        talk.joining = False
        bus = talk.bus
        owner = _owner(bus, self.name)
        if owner is self:
            return
        if isinstance(owner, BusMessaging) and owner._talk.listening and not replace:
            log.info("bus: robot '%s' is listening on bus '%s' already; this one only sends", self.name, bus.name)
            return
        bus.remove_channel(self.name)
        bus.subscribe(self.name, self._receive)

    def _need_bus(self) -> MessageBus:
        self._join_bus()
        bus = self._talk.bus
        if bus is None:
            raise BusError(f"No bus configured on robot '{self.name}': put it on one first with "
                           "robot.with_bus(bus) (or robot.with_bus() for a new bus)")
        return bus

    def _next(self, *, content: str | Mapping[str, Any], in_reply_to: str | None) -> RobotMessage:
        talk = self._talk
        with talk.lock:
            talk.counter += 1
            return RobotMessage(id=talk.counter, from_=self.name, content=content, in_reply_to=in_reply_to)

    def send_message(self, *, to: str | BusMessaging, content: str | Mapping[str, Any]) -> RobotMessage:
        """Send ``content`` to the robot named ``to`` and return the message (its reply, when one comes, is
        in :attr:`outbox` under the message's key). Does not wait for the recipient."""
        return self._post(to=to, content=content).message

    def _post(self, *, to: str | BusMessaging, content: str | Mapping[str, Any], origin: Any = None) -> Delivery:
        """:meth:`send_message`, returning the delivery (whose handling can be awaited); ``origin``: the tool call
        that sends it."""
        bus = self._need_bus()
        recipient = to.name if isinstance(to, BusMessaging) else str(to)
        message = self._next(content=content, in_reply_to=None)
        with self._talk.lock:
            self._talk.outbox[message.key] = OutboxEntry(message)
        return bus.publish(recipient, message, origin=origin)

    def send_reply(self, *, to: str | BusMessaging, content: str | Mapping[str, Any],
                   in_reply_to: str) -> RobotMessage:
        """Answer the message whose key is ``in_reply_to`` (a reply is not kept in the outbox)."""
        bus = self._need_bus()
        recipient = to.name if isinstance(to, BusMessaging) else str(to)
        message = self._next(content=content, in_reply_to=in_reply_to)
        bus.publish(recipient, message)
        return message

    @property
    def outbox(self) -> dict[str, OutboxEntry]:
        """The messages this robot sent, by key, with their replies."""
        return self._talk.outbox

    @overload
    def on_message(self, handler: MessageHandler) -> Self: ...

    @overload
    def on_message(self, handler: None = None) -> Callable[[MessageHandler], MessageHandler]: ...

    def on_message(self, handler: MessageHandler | None = None) -> Self | Callable[[MessageHandler], MessageHandler]:
        """Handle the messages this robot receives, one at a time (plain or ``async``). ``handler(message)``:
        acknowledged before the call, refused (``nack``) when it raises. ``handler(delivery, message)``:
        the handler calls ``delivery.ack()`` or ``delivery.nack()`` itself. Usable as a decorator."""
        if handler is None:
            def decorate(fn: MessageHandler) -> MessageHandler:
                self.on_message(fn)
                return fn

            return decorate
        talk = self._talk
        talk.handler, talk.listening = handler, True
        self._join_bus()
        return self

    async def _receive(self, delivery: Delivery) -> None:
        message = delivery.message
        talk = self._talk
        if message.in_reply_to is not None:
            with talk.lock:
                entry = talk.outbox.get(message.in_reply_to)
                if entry is not None:
                    entry.status = "replied"
                    entry.replies.append(message)
        handler = talk.handler
        manual = _wants_delivery(handler)
        if not manual:
            delivery.ack()
        try:
            outcome = handler(delivery, message) if manual else handler(message)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception as exc:
            delivery.nack()
            raise BusError(f"Error handling bus message on robot '{self.name}': {exc}") from exc

    def respond_to_tasks(self, handler: Callable[[RobotMessage], Any], *, auto_reply: bool = True) -> Self:
        """Answer each message that is not itself a reply with ``handler(message)`` (plain or ``async``),
        sent back as a reply when ``auto_reply`` and the answer is not None."""
        async def answer(message: RobotMessage) -> None:
            if message.reply:
                return
            reply = handler(message)
            if inspect.isawaitable(reply):
                reply = await reply
            if auto_reply and reply is not None:
                self.send_reply(to=message.from_, content=reply, in_reply_to=message.key)

        return self.on_message(answer)

    def serve(self, *, auto_reply: bool = True) -> Self:
        """Run each task message through this robot and reply with its answer (a mapping's content is sent
        to the model as ``key: value`` lines)."""
        async def work(message: RobotMessage) -> Any:
            result = await self.arun(_as_text(message.content))
            return result.last_text_content

        return self.respond_to_tasks(work, auto_reply=auto_reply)

    if TYPE_CHECKING:
        async def arun(self, message: Any, **options: Any) -> RobotResult: ...

    # -- robots that make robots ----------------------------------------------------------------------
    def _child_options(self) -> dict[str, Any]:
        """RobotLab's inherited LLM settings: this robot's model and provider (the provider object carries
        its server and which keys may go there), configuration and folder."""
        out: dict[str, Any] = {"provider": getattr(self, "provider", None), "model": getattr(self, "model", None),
                               "config": getattr(self, "_config", None), "folder": getattr(self, "folder", None)}
        return {key: value for key, value in out.items() if value is not None}

    def spawn(self, *, name: str = "robot", system_prompt: str | None = None, template: Any = None,
              local_tools: Iterable[Any] = (), **options: Any) -> Any:
        """A new robot on this robot's bus (made if it has none) with this robot's model and provider
        (``options`` override them, and are any other Robot argument)."""
        bus = self._talk.bus
        if bus is None:
            self.with_bus()
            bus = self._need_bus()
        make: Callable[..., BusMessaging] = type(self)
        child = make(name, system_prompt=system_prompt, template=template, local_tools=list(local_tools),
                     **{**self._child_options(), **options})
        child.with_bus(bus)
        self._talk.children[child.name] = child
        return child

    @property
    def children(self) -> dict[str, Any]:
        """The robots this one spawned, by name."""
        return dict(self._talk.children)

    @overload
    async def delegate(self, *, to: Any, task: Any, background: Literal[False] = False,
                       **options: Any) -> RobotResult: ...

    @overload
    async def delegate(self, *, to: Any, task: Any, background: Literal[True], **options: Any) -> DelegationFuture: ...

    async def delegate(self, *, to: Any, task: Any, background: bool = False,
                       **options: Any) -> RobotResult | DelegationFuture:
        """Have robot ``to`` run ``task`` and return its result, with ``duration`` (seconds) and
        ``delegated_by`` (this robot's name); ``background=True`` returns a :class:`DelegationFuture` at
        once. ``options`` go to ``to.arun``. Errors of the delegate propagate (from ``value()`` in the
        background)."""
        return await delegate(to, task, delegated_by=self.name, background=background, **options)


def watch_run(robot: BusMessaging) -> Callable[[Callable[[Any], Any]], Callable[[], None]]:
    """A run of ``robot`` outside a network, on a bus: each message it sends, and each sent to it by a robot with
    no such run going, becomes a ``bus_message`` event in the run's stream while the run goes (a network's run
    shows its bus itself). Given to the run as one of its ``watchers``."""
    from workspace import events as ev

    def watch(emit: Callable[[Any], Any]) -> Callable[[], None]:
        bus = robot.bus
        if bus is None:
            return lambda: None
        name = robot.name
        with bus._lock:
            bus._watched[name] = bus._watched.get(name, 0) + 1

        def observe(delivery: Delivery) -> None:
            message = delivery.message
            sent = message.from_ == name
            if not sent and (delivery.to != name or bus._watched.get(message.from_)):
                return  # not its message, or the sender's own run shows it
            content = message.content if isinstance(message.content, str) else dict(message.content)
            emit(ev.BusMessage(sender=message.from_, to=delivery.to, content=content, message_id=message.key,
                               in_reply_to=message.in_reply_to))

        remove = bus.add_observer(observe)

        def stop() -> None:
            remove()
            with bus._lock:
                left = bus._watched.get(name, 0) - 1
                if left > 0:
                    bus._watched[name] = left
                else:
                    bus._watched.pop(name, None)

        return stop

    return watch


#: How long the ``send_message`` tool waits for the recipient's reply by default (seconds).
REPLY_TIMEOUT = 120.0


def message_tool(robot: BusMessaging, *, reply_timeout: float = REPLY_TIMEOUT) -> Any:
    """The ``send_message`` tool a model on a network's bus is given: it sends a message to another robot of
    the bus and returns that robot's reply, once it has handled the message (at most ``reply_timeout``
    seconds); a robot that does not answer messages is said to have received it."""
    from workspace.tools.base import Tool, ToolContext

    async def send(arguments: dict[str, Any], context: ToolContext | None = None) -> str:
        bus = robot._need_bus()
        to = str(arguments.get("to") or "").strip()
        content = str(arguments.get("content") or "")
        if not bus.has_channel(to):
            others = ", ".join(sorted(n for n in bus.channels if n != robot.name)) or "none"
            raise BusError(f"No robot named '{to}' is on this bus; send to one of: {others}")
        replies: list[RobotMessage] = []
        sent: list[str] = []

        def watch(delivery: Delivery) -> None:
            if sent and delivery.message.in_reply_to == sent[0]:
                replies.append(delivery.message)

        remove = bus.add_observer(watch)
        try:
            delivery = robot._post(to=to, content=content, origin=context)
            sent.append(delivery.message.key)
            handled = await delivery.wait_handled(timeout=reply_timeout)
        finally:
            remove()
        if replies:
            return _as_text(replies[0].content)
        if not handled:
            return f"Sent to {to} (message {sent[0]}); no reply within {reply_timeout:g} s."
        if delivery.error is not None:
            return f"Sent to {to} (message {sent[0]}); {to} failed to answer it: {delivery.error}"
        if delivery.status == "nacked":
            return f"Sent to {to} (message {sent[0]}); {to} refused it and sent no reply."
        return f"Sent to {to} (message {sent[0]}); {to} received it and sent no reply."

    return Tool("send_message", (
        "Send a message to another robot on this network's message bus and get its reply. Use it to ask another "
        "robot a question or hand it a piece of work."), {
        "type": "object", "properties": {
            "to": {"type": "string", "description": "The name of the robot to send the message to"},
            "content": {"type": "string", "description": "The message"}},
        "required": ["to", "content"]}, send)
