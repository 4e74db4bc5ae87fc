#!/usr/bin/env python3
"""Writes the `observe` forms of NotificationHub: Sources/Herald/Hub/NotificationHub+Observe*.swift.

Every kind of observation (of one type, of a family, of every notification) has the same ten
forms, in the same order: where the handler runs (a target, the main actor, an actor), what bounds
the observation (the token, or an owner), and whether the handler is synchronous or `async`. Each
form builds one `Handler` from the adapters in Mailbox/Handler.swift and calls its kind's one
registration function. The options are documented once, in the DocC article
"ObservingNotifications"; each form links there. Edit this script, not the generated files, and
run it from the repository's root: `python3 Scripts/generate-observe-forms.py`. CI checks that the
files are up to date (`--check`).
"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
HUB = ROOT / "Sources/Herald/Hub"
ARTICLE = "ObservingNotifications"

# The ten forms: (isolation, owner, async).
FORMS = [(iso, owned, is_async) for is_async in (False, True) for (iso, owned) in
         (("target", False), ("main", False), ("actor", False), ("target", True), ("main", True))]


class Kind:
    def __init__(self, name, func, lead, generic, value, replay, register, title, examples):
        self.name = name            # used in the generated file's name
        self.func = func            # the function's base name
        self.lead = lead            # the leading parameter, or None
        self.generic = generic      # the kind's own generic parameter, or None
        self.value = value          # what the handler receives
        self.replay = replay        # whether it takes replayLatest:
        self.register = register    # the registration call, with {target}, {owner} and {handler}
        self.title = title          # what it observes, for the summaries
        self.examples = examples    # per form key, a usage example (without the comment fence)


def form_key(iso, owned, is_async):
    return ("async " if is_async else "") + ("owner " if owned else "") + iso


def handler_type(value, iso, owned, is_async):
    args = []
    if iso == "actor":
        args.append("isolated A")
    if owned:
        args.append("Owner")
    args.append(value)
    effects = "async throws" if is_async else "throws"
    isolation = "@MainActor " if iso == "main" else ""
    return f"@escaping {isolation}@Sendable ({', '.join(args)}) {effects} -> Void"


def handler_expr(iso, owned, is_async):
    if not is_async:
        body = "handler"
        if iso == "main":
            body = "Adapt.onMainActor(handler)"
        elif iso == "actor":
            body = "Adapt.on(actor, handler)"
        if owned:
            body = f"Adapt.owned(by: owner, {body})"
        return f".plain({body})"
    body = "AsyncCall.owned(by: owner, handler)" if owned else "handler"
    if iso == "main":
        return f".async(AsyncCall.mainActor({body}))"
    if iso == "actor":
        return ".async(AsyncCall.actor(actor, handler))"
    return f".async(AsyncCall.nonisolated({body}))"


def target_expr(iso):
    return {"target": "target", "main": ".mainQueue", "actor": "DeliveryTarget(kind: .actor(actor))"}[iso]


def on_param(iso):
    return {
        "target": "on target: DeliveryTarget = .posting",
        "main": "on mainActor: MainActor",
        "actor": "on actor: A",
    }[iso]


def generics(kind, iso, owned):
    names = [kind.generic] if kind and kind.generic else []
    if iso == "actor":
        names.append("A: Actor")
    if owned:
        names.append("Owner: AnyObject & Sendable")
    return f"<{', '.join(names)}>" if names else ""


def summary(kind, iso, owned, is_async):
    where = {
        "target": "on a delivery target",
        "main": "on the main actor, with a `@MainActor` handler",
        "actor": "on an actor, with a handler isolated to it",
    }[iso]
    text = f"Observes {kind.title} {where}"
    if owned:
        text += ", for as long as `owner` lives"
    if is_async:
        text += "; the handler is `async`"
    return text + "."


def doc(kind, iso, owned, is_async, first):
    key = form_key(iso, owned, is_async)
    lines = [summary(kind, iso, owned, is_async), ""]
    lines += ["```swift"] + kind.examples[key].strip("\n").split("\n") + ["```", ""]
    if first:
        lines += kind.overview + [""]
    lines.append(f"The options are described once, in <doc:{ARTICLE}>.")
    lines += ["", "- Parameters:"]
    if kind.lead:
        lines.append(f"  - {kind.lead_name}: {kind.lead_doc}")
    if owned:
        lines.append(f"  - owner: Bounds the observation, held weakly: <doc:{ARTICLE}#Owner>.")
    lines.append(f"  - subject: Only posts with this object as subject: <doc:{ARTICLE}#Subject>.")
    lines.append({
        "target": f"  - target: Where the handler runs: <doc:{ARTICLE}#Target-and-isolation>.",
        "main": "  - mainActor: `MainActor.shared`.",
        "actor": "  - actor: The actor, retained while the observation lasts.",
    }[iso])
    lines.append(f"  - priority: Order among a post's observers: <doc:{ARTICLE}#Priority>.")
    lines.append(f"  - bufferingPolicy: What the mailbox keeps: <doc:{ARTICLE}#Buffering-policy>.")
    if kind.replay:
        lines.append(f"  - replayLatest: Whether to start with retained values: <doc:{ARTICLE}#Replay>.")
    lines.append(f"  - fileID: The registering file: <doc:{ARTICLE}#Registration-site>.")
    lines.append(f"  - line: The registering line: <doc:{ARTICLE}#Registration-site>.")
    handler = "The handler"
    if iso == "actor":
        handler += ", given the isolated actor"
    if owned:
        handler += (" and" if iso == "actor" else ", given") + " the owner"
    lines.append(f"  - handler: {handler}. Errors it throws go to ``errorHandler``.")
    lines.append(f"- Returns: The observation: <doc:{ARTICLE}#The-token>.")
    return "\n".join(("    /// " + line).rstrip() for line in lines)


def declaration(kind, iso, owned, is_async, first, deprecated=None, forward=None, lead=None, renamed=None):
    out = []
    if deprecated:
        out.append("    @available(")
        out.append("        *, deprecated,")
        if renamed:
            out.append(f"        renamed: \"{renamed}\",")
        out.append("        message:")
        out.append(f"            \"{deprecated}\"")
        out.append("    )")
    else:
        out.append(doc(kind, iso, owned, is_async, first))
    if owned:
        out.append("    @discardableResult")
    generic = generics(kind, iso, owned)
    if lead is not None:
        generic = lead[1]
    out.append(f"    public func {kind.func}{generic}(")
    params = []
    if lead is not None:
        params.append(lead[0])
    elif kind.lead:
        params.append(kind.lead)
    if owned:
        params.append("owner: Owner")
    params.append("from subject: AnyObject? = nil")
    params.append(on_param(iso))
    params.append("priority: Int = 0")
    params.append("bufferingPolicy: NotificationBufferingPolicy = .unbounded")
    if kind.replay:
        params.append("replayLatest: Bool = false")
    params.append("fileID: StaticString = #fileID")
    params.append("line: UInt = #line")
    value = lead[2] if lead is not None else kind.value
    params.append(f"_ handler: {handler_type(value, iso, owned, is_async)}")
    out += [f"        {p}," for p in params[:-1]] + [f"        {params[-1]}"]
    out.append("    ) -> ObservationToken {")
    if forward:
        out.append(forward(iso, owned))
    elif kind is TYPE and iso == "target" and not owned and not is_async:
        # The form of the most common registration (a plain handler, on the posting thread by
        # default) hands its closure over as it is: see `registerPlain` in NotificationHub.swift.
        out.append(PLAIN_REGISTER)
    else:
        call = kind.register.format(
            target=target_expr(iso), owner="owner" if owned else "nil",
            handler=handler_expr(iso, owned, is_async))
        out.append(call)
    out.append("    }")
    return "\n".join(out)


PLAIN_REGISTER = """        registerPlain(
            target: target, subject: subject, fileID: fileID, line: line, bufferingPolicy: bufferingPolicy,
            priority: priority, replayLatest: replayLatest, handler: handler)"""


HEADER = """// Generated by Scripts/generate-observe-forms.py: edit the script, not this file.
"""

TYPE = Kind(
    name="Observe", func="observe", lead="_ type: N.Type", generic="N: TypedNotification", value="N",
    replay=True,
    register="""        register(
            target: {target}, subject: subject, owner: {owner}, fileID: fileID, line: line,
            bufferingPolicy: bufferingPolicy, priority: priority, replayLatest: replayLatest,
            handler: {handler})""",
    title="notifications of type `N`",
    examples={
        "target": """let token = hub.observe(UserCreated.self, on: .queue(database)) { note in
    try store.insert(note.userID)
}""",
        "main": """let token = hub.observe(UserCreated.self, on: MainActor.shared) { note in
    loginView.dismiss()                     // the compiler knows this is the main actor
}""",
        "actor": """actor Store { func apply(_ note: UserCreated) { … } }
let token = hub.observe(UserCreated.self, on: store) { store, note in
    store.apply(note)                       // isolated to `store`, no await
}""",
        "owner target": """hub.observe(UserCreated.self, owner: self, on: .queue(database)) { me, note in
    me.save(note)                           // ends when `self` is deallocated
}""",
        "owner main": """hub.observe(UserCreated.self, owner: self, on: MainActor.shared) { me, note in
    me.users.append(note.userID)
}""",
        "async target": """let token = hub.observe(UserCreated.self, on: .queue(database)) { note in
    try await uploader.send(note)           // one call at a time, in order
}""",
        "async main": """let token = hub.observe(UserCreated.self, on: MainActor.shared) { note in
    await model.refresh(note.userID)
}""",
        "async actor": """let token = hub.observe(UserCreated.self, on: store) { store, note in
    await store.sync(note)
}""",
        "async owner target": """hub.observe(UserCreated.self, owner: self) { me, note in
    try await me.upload(note)
}""",
        "async owner main": """hub.observe(UserCreated.self, owner: self, on: MainActor.shared) { me, note in
    await me.reload()
}""",
    },
)
TYPE.lead_name = "type"
TYPE.lead_doc = "The notification type."
TYPE.overview = [
    "Each observer on an asynchronous target has its own mailbox: its calls never overlap and see",
    "the posts of one thread in order. `cancel()` is final: once it returns, the handler is not",
    "started again. See <doc:ThreadingAndDelivery>.",
    "",
    "- Complexity: Amortised O(1).",
]

FAMILY = Kind(
    name="ObserveEvery", func="observe", lead="every family: Family.Type", generic="Family: Sendable",
    value="Family", replay=True,
    register="""        registerFamily(
            Family.self, target: {target}, subject: subject, owner: {owner}, priority: priority,
            bufferingPolicy: bufferingPolicy, replayLatest: replayLatest, fileID: fileID, line: line,
            handler: {handler})""",
    title="every notification of a family (a protocol or a class)",
    examples={
        "target": """protocol AnalyticsEvent: TypedNotification { var name: String { get } }
let token = hub.observe(every: (any AnalyticsEvent).self, on: .queue(analytics)) { event in
    tracker.send(event.name)                // every type that conforms
}""",
        "main": """let token = hub.observe(every: (any AnalyticsEvent).self, on: MainActor.shared) { event in
    debugOverlay.show(event.name)
}""",
        "actor": """let token = hub.observe(every: (any AnalyticsEvent).self, on: tracker) { tracker, event in
    tracker.count(event.name)
}""",
        "owner target": """hub.observe(every: (any AnalyticsEvent).self, owner: self, on: .queue(analytics)) { me, event in
    me.log(event.name)
}""",
        "owner main": """hub.observe(every: (any AnalyticsEvent).self, owner: self, on: MainActor.shared) { me, event in
    me.lastEvent = event.name
}""",
        "async target": """let token = hub.observe(every: (any AnalyticsEvent).self, on: .queue(analytics)) { event in
    try await backend.send(event.name)
}""",
        "async main": """let token = hub.observe(every: (any AnalyticsEvent).self, on: MainActor.shared) { event in
    await banner.flash(event.name)
}""",
        "async actor": """let token = hub.observe(every: (any AnalyticsEvent).self, on: tracker) { tracker, event in
    await tracker.flush(after: event.name)
}""",
        "async owner target": """hub.observe(every: (any AnalyticsEvent).self, owner: self) { me, event in
    try await me.upload(event.name)
}""",
        "async owner main": """hub.observe(every: (any AnalyticsEvent).self, owner: self, on: MainActor.shared) { me, event in
    await me.show(event.name)
}""",
    },
)
FAMILY.lead_name = "family"
FAMILY.lead_doc = "A protocol's existential, such as `(any AnalyticsEvent).self`, or a base class."
FAMILY.overview = [
    "Pass a protocol's existential, or a base class: a non-final class cannot be a notification,",
    "but its final subclasses can. The handler receives each posted notification that can be cast",
    "to the family, whatever its concrete type. Such an observer is one observer with one mailbox,",
    "however many types it receives, and every guarantee of an observer of one type holds. A type",
    "that conforms to several observed protocols reaches each of their observers once.",
    "",
    "Herald decides once per posted type whether it belongs (at the first post of the type after",
    "the observer registered) and caches the answer; the answer is Swift's `as?` cast, which for a",
    "notification made of an `Optional` looks inside the value. Family observers are counted by",
    "``observerCount(every:)``, not ``observerCount(of:)``. A type that no notification can be cast",
    "to, such as `String.self`, is refused and reported (see ``FamilyMismatch``). To observe every",
    "notification, use `observeAll`.",
    "",
    "- Complexity: O(1) to register, however many types the hub has seen; cancelling is O(the",
    "  family's types posted since it registered).",
]

TAP = Kind(
    name="ObserveAll", func="observeAll", lead=None, generic=None, value="PostedNotification", replay=False,
    register="""        registerTap(
            target: {target}, subject: subject, owner: {owner}, priority: priority,
            bufferingPolicy: bufferingPolicy, fileID: fileID, line: line, handler: {handler})""",
    title="every notification of the hub, as a tap",
    examples={
        "target": """let logging = hub.observeAll(on: .queue(logQueue)) { posted in
    logger.debug("\\(posted.type): \\(posted.notification)")
}""",
        "main": """let overlay = hub.observeAll(on: MainActor.shared) { posted in
    debugOverlay.append("\\(posted.type)")
}""",
        "actor": """let audit = hub.observeAll(on: auditLog) { log, posted in
    log.record(posted)
}""",
        "owner target": """hub.observeAll(owner: self, on: .queue(logQueue)) { me, posted in
    me.write(posted)
}""",
        "owner main": """hub.observeAll(owner: self, on: MainActor.shared) { me, posted in
    me.entries.append("\\(posted.type)")
}""",
        "async target": """let shipping = hub.observeAll(on: .queue(logQueue)) { posted in
    try await collector.ship("\\(posted.type)")
}""",
        "async main": """let overlay = hub.observeAll(on: MainActor.shared) { posted in
    await debugOverlay.flash("\\(posted.type)")
}""",
        "async actor": """let audit = hub.observeAll(on: auditLog) { log, posted in
    await log.persist(posted)
}""",
        "async owner target": """hub.observeAll(owner: self) { me, posted in
    try await me.ship(posted)
}""",
        "async owner main": """hub.observeAll(owner: self, on: MainActor.shared) { me, posted in
    await me.show(posted)
}""",
    },
)
TAP.overview = [
    "A tap receives every notification posted on the hub as a ``PostedNotification`` (the value,",
    "its type and the subject's identity). Taps only watch: a post that reaches nothing but taps",
    "still counts as unobserved, waiting posts neither wait for taps nor count them, taps are not",
    "counted by ``observerCount(of:)`` (see ``tapRegistrations()``), and they get no replay: a tap",
    "sees posts as they happen (read retained values with ``retainedValue(of:from:)``).",
]


def kind_file(kind):
    decls = [declaration(kind, iso, owned, is_async, first=(index == 0))
             for index, (iso, owned, is_async) in enumerate(FORMS)]
    return HEADER + "\nextension NotificationHub {\n" + "\n\n".join(decls) + "\n}\n"


def misuse_file():
    def forward_type(iso, owned):
        on = {"target": "target", "main": "mainActor", "actor": "actor"}[iso]
        owner = " owner: owner," if owned else ""
        return f"""        observe(
            type,{owner} from: subject, on: {on}, priority: priority, bufferingPolicy: bufferingPolicy,
            replayLatest: replayLatest, fileID: fileID, line: line, handler)"""

    def forward_everything(iso, owned):
        return FAMILY.register.format(
            target=target_expr(iso), owner="owner" if owned else "nil", handler="HANDLER"
        ).replace("Family.self", "(any TypedNotification).self")

    typed = []
    everything = []
    for (iso, owned, is_async) in FORMS:
        message = ("'every:' takes a family (a protocol's existential or a base class); observe one "
                   "notification type with observe(_:" + ("owner:" if owned else "") + ")")
        # The fix-it rewrites the call to the matching `observe(_:)`: the same arguments, the
        # first one without its `every:` label.
        renamed = "observe(_:" + ("owner:" if owned else "") + "from:on:priority:bufferingPolicy:replayLatest:fileID:line:_:)"
        typed.append(declaration(
            FAMILY, iso, owned, is_async, first=False, deprecated=message, forward=forward_type, renamed=renamed,
            lead=("every type: N.Type", generics(TYPE, iso, owned), "N")))
        message = ("observe every notification with observeAll(…), a tap that receives a "
                   "PostedNotification (value, type, subject); a post that only a tap sees counts as "
                   "unobserved, and waiting posts do not wait for taps")
        handler = handler_expr(iso, owned, is_async)
        everything.append(declaration(
            FAMILY, iso, owned, is_async, first=False, deprecated=message,
            forward=lambda i, o, h=handler: forward_everything(i, o).replace("HANDLER", h),
            lead=("every family: (any TypedNotification).Type", generics(None, iso, owned), "any TypedNotification")))
    return (HEADER + """
/// `observe(every:)` given a notification type instead of a family.
///
/// `every:` takes a protocol's existential, such as `(any AnalyticsEvent).self`, or a base class.
/// Given a concrete notification type, it observes that one type, as `observe(_:)` does, but the
/// compiler warns: these overloads are more specific than the family ones, so they are chosen for
/// a `TypedNotification` type, and they are deprecated, not unavailable, because an unavailable
/// overload would be ranked below the generic family one and the call would compile silently.
/// Each forwards to the matching `observe(_:)`.
extension NotificationHub {
""" + "\n\n".join(typed) + """
}

/// `observe(every: (any TypedNotification).self)`: every notification, as an observer.
///
/// The one way to observe every notification is `observeAll`, a tap. These overloads are more
/// specific than the generic family ones, so the compiler warns and names `observeAll`; they keep
/// their old behaviour (an observer of the family of every notification, counted as an observer).
extension NotificationHub {
""" + "\n\n".join(everything) + "\n}\n")


def main():
    files = {
        HUB / "NotificationHub+Observe.swift": kind_file(TYPE),
        HUB / "NotificationHub+ObserveEvery.swift": kind_file(FAMILY),
        HUB / "NotificationHub+ObserveAll.swift": kind_file(TAP),
        HUB / "NotificationHub+FamilyMisuse.swift": misuse_file(),
    }
    check = "--check" in sys.argv
    stale = []
    for path, text in files.items():
        # Laid out by the formatter that lints the repository, so that the files pass its lint.
        text = subprocess.run(
            ["swift", "format", "--assume-filename", str(path)], input=text, capture_output=True, text=True,
            check=True, cwd=ROOT).stdout
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text)
    if stale:
        print("out of date (run python3 Scripts/generate-observe-forms.py):", *stale, sep="\n  ")
        sys.exit(1)


if __name__ == "__main__":
    main()
