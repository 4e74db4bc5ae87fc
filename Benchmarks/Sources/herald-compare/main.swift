// herald-compare: Herald side by side with the alternatives a user would otherwise pick, in one
// process, interleaved, reported as ratios.
//
//   swift run -c release --package-path Benchmarks herald-compare [--quick] [--markdown] [--svg PATH] [--strict]

import Foundation

#if canImport(Glibc)
import Glibc
#endif

let usage = """
    usage: herald-compare [--quick] [--markdown] [--svg PATH] [--strict]
      --quick      a short run, for CI smoke tests
      --markdown   print the table as markdown (for the README)
      --svg PATH   write a chart of cost per post against observer count to PATH
      --strict     exit with status 1 if a DESIGN target shows MISS
      --only LIST  run only these scenarios (comma-separated): sync, many, crowd, families,
                   registration (observe(every:) and observeAll + cancel on a hub that has seen
                   1,000 and 5,000 types), churn,
                   contention, burst, main, fairness, idle, roundtrip, memory, soak, coalescing
                   (a MainActor flood with bufferingPolicy .latest against .unbounded), bounded
                   (a slow observer's memory with .bufferingNewest(1000) against .unbounded); the
                   targets of the others are not checked
    """

var settings = Settings()
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick": settings.quick = true
    case "--markdown": settings.markdown = true
    case "--strict": settings.strict = true
    case "--only":
        guard let names = arguments.popFirst() else {
            FileHandle.standardError.write(Data("--only needs a list of scenarios\n\(usage)\n".utf8))
            exit(2)
        }
        settings.only = Set(names.split(separator: ",").map(String.init))
    case "--svg":
        guard let path = arguments.popFirst() else {
            FileHandle.standardError.write(Data("--svg needs a path\n\(usage)\n".utf8))
            exit(2)
        }
        settings.svgPath = path
    case "--help", "-h":
        print(usage)
        exit(0)
    default:
        FileHandle.standardError.write(Data("unknown option \(argument)\n\(usage)\n".utf8))
        exit(2)
    }
}

let runStart = nowNanoseconds()
print("herald-compare\(settings.quick ? " --quick" : ""): \(machineDescription())")
print("Each figure is the median of interleaved rounds in this one process (a synchronous sample is the best of")
print("\(settings.slicesPerSample) short slices; a burst is one sample); × Herald = contender / Herald.")
print("Heap allocations are counted by an interposed malloc; memory by glibc mallinfo2 and /proc/self/statm.")
print("While another thread loads a contender on purpose, a sample is one whole slice, not the best of several.")
print("A target that cannot be measured here prints n/a.")

func progress(_ text: String) {
    FileHandle.standardError.write(Data("… \(text)\n".utf8))
}

var sections: [Section] = []
var checks: [TargetCheck] = []

// Synchronous delivery.
let sync = SyncScenarios(settings: settings)
var one: SyncScenarios.OneObserverResult?
if settings.runs("sync") {
    progress("synchronous post, 1 observer")
    one = sync.oneObserver()
    sections.append(one!.section)
}

var many: [Int: SyncScenarios.ManyObserversResult] = [:]
if settings.runs("many") {
    for count in [10, 100, 1_000] {
        progress("synchronous post, \(count) observers")
        many[count] = sync.manyObservers(count)
        sections.append(many[count]!.section)
    }
}

var crowd: SyncScenarios.OtherTypesResult?
if settings.runs("crowd") {
    progress("1 observer + 10,000 of other types")
    crowd = sync.otherTypes(10_000)
    sections.append(crowd!.section)
}

// Families: observers of protocols.
let familyScenarios = FamilyScenarios(settings: settings)
var unrelatedFamilies: FamilyScenarios.UnrelatedResult?
if settings.runs("families") {
    progress("1 observer + 10 observers of unrelated protocols")
    unrelatedFamilies = familyScenarios.unrelatedFamilies()
    sections.append(unrelatedFamilies!.section)
    progress("delivery through a protocol observer")
    sections.append(familyScenarios.familyDelivery().section)
}

var registrations: [FamilyScenarios.RegistrationResult] = []
if settings.runs("registration") {
    for seenTypes in [1_000, 5_000] {
        progress("observe(every:) and observeAll + cancel, \(seenTypes.formatted) types seen")
        registrations.append(familyScenarios.registration(seenTypes: seenTypes))
        sections.append(registrations.last!.section)
    }
}

// Registration churn and concurrent posters.
let contention = ContentionScenarios(settings: settings)
var churn: [ContentionScenarios.ChurnResult] = []
if settings.runs("churn") {
    for background in ContentionScenarios.Background.allCases {
        progress("observe + cancel, \(background.title)")
        churn.append(contention.observeAndCancel(background))
        sections.append(churn.last!.section)
    }
}
var twoPosters: ContentionScenarios.TwoPostersResult?
if settings.runs("contention") {
    progress("two threads posting the same type")
    twoPosters = contention.twoPosters()
    sections.append(twoPosters!.section)
}

// Asynchronous delivery.
let asyncScenarios = AsyncScenarios(settings: settings)
var burst: AsyncScenarios.SerialBurstResult?
if settings.runs("burst") {
    progress("asynchronous burst to a serial queue")
    burst = asyncScenarios.serialQueueBurst()
    sections.append(burst!.section)
}
var mainBurst: AsyncScenarios.MainBurstResult?
if settings.runs("main") {
    progress("burst to the main queue")
    mainBurst = asyncScenarios.mainQueueBurst()
    sections.append(mainBurst!.section)
}
let fairness = FairnessScenarios(settings: settings)
var flood: FairnessScenarios.FloodResult?
var paced: FairnessScenarios.PacedResult?
if settings.runs("fairness") {
    progress("main-queue fairness, flood of \(settings.floodSize.formatted) posts")
    flood = fairness.flood()
    sections.append(flood!.section)
    progress("main-queue fairness, paced posts")
    paced = fairness.paced()
    sections.append(paced!.section)
}
var idle: FairnessScenarios.IdleResult?
if settings.runs("idle") {
    progress("idle CPU, bursts and pauses")
    idle = fairness.idleCPU()
    sections.append(idle!.section)
}
var roundTrip: AsyncScenarios.RoundTripResult?
if settings.runs("roundtrip") {
    progress("postAndWait round trip")
    roundTrip = asyncScenarios.roundTrip()
    sections.append(roundTrip!.section)
}

// Memory.
let memory = MemoryScenarios(settings: settings)
var perObserver: MemoryScenarios.ObserverResult?
var perQueued: MemoryScenarios.QueuedResult?
if settings.runs("memory") {
    progress("memory per observer")
    perObserver = memory.bytesPerObserver()
    sections.append(perObserver!.section)
    progress("memory per queued notification")
    perQueued = memory.bytesPerQueuedNotification()
    sections.append(perQueued!.section)
}
// Mailbox policies.
let mailboxPolicies = MailboxPolicyScenarios(settings: settings)
if settings.runs("coalescing") {
    progress("mailbox policy .latest, flood of \(settings.floodSize.formatted) posts to a MainActor observer")
    sections.append(mailboxPolicies.coalescingFlood().section)
}
if settings.runs("bounded") {
    progress("mailbox policy .bufferingNewest(1000), a slow observer behind a fast poster")
    sections.append(mailboxPolicies.boundedMemory().section)
}
var soak: MemoryScenarios.SoakResult?
if settings.runs("soak") {
    progress("soak")
    soak = memory.soak()
}

// Report.
if settings.markdown {
    print("")
    print(markdownTable(sections))
} else {
    print(plainTable(sections))
}
if let soak {
    print("")
    for line in soak.lines { print(line) }
}

// Targets.
func ns(_ value: Double?) -> String { value.map { formatNumber($0) + " ns" } ?? "not measured" }

let allocationTarget = "sync post to 1 posting-thread observer makes 0 heap allocations"
if let one {
    if let mallocs = one.heraldMallocsPerPost {
        checks.append(
            TargetCheck(
                target: allocationTarget, measured: "\(formatNumber(mallocs)) mallocs/post", passed: mallocs == 0))
    } else {
        checks.append(
            TargetCheck(
                target: allocationTarget,
                measured: "not counted on this platform (see the package-benchmark suite)", passed: nil))
    }
    if let herald = one.heraldNanoseconds, let foundation = one.foundationNanoseconds {
        var measured = "\(ns(herald)) vs \(ns(foundation)) (userInfo nil) = 1/\(formatNumber(foundation / herald))"
        if let withInfo = one.foundationUserInfoNanoseconds {
            measured += "; vs \(ns(withInfo)) with a 1-entry userInfo = 1/\(formatNumber(withInfo / herald))"
        }
        checks.append(
            TargetCheck(
                target: "sync post to 1 observer ≤ 1/10 of NotificationCenter.post, userInfo nil",
                measured: measured,
                passed: herald * 10 <= foundation))
    }
}
if let twoPosters, let herald = twoPosters.heraldSlowdown, let foundation = twoPosters.foundationSlowdown {
    checks.append(
        TargetCheck(
            target: "two threads posting the same type slow each post no more than NotificationCenter's",
            measured: "Herald \(formatRatio(herald)) vs NotificationCenter \(formatRatio(foundation)) "
                + "of 1 thread's cost per post"
                + (twoPosters.controlSlowdown.map { " (a direct closure call: \(formatRatio($0)))" } ?? ""),
            passed: herald <= foundation))
}
for result in churn {
    guard let herald = result.herald, let foundation = result.foundation else { continue }
    checks.append(
        TargetCheck(
            target: "observe + cancel ≤ 0.5× addObserver + removeObserver, \(result.background.title)",
            measured: "\(ns(herald)) vs \(ns(foundation)) = \(formatRatio(herald / foundation))",
            passed: herald <= 0.5 * foundation))
    checks.append(
        TargetCheck(
            target: "observe + cancel ≤ 1/3 of addObserver + removeObserver, \(result.background.title) (the goal "
                + "of the one-way rework, issue #41)",
            measured: "\(ns(herald)) vs \(ns(foundation)) = \(formatRatio(herald / foundation))",
            passed: 3 * herald <= foundation))
}
if let one, let single = one.heraldNanoseconds, let thousand = many[1_000]?.heraldPost,
    let direct = many[1_000]?.directPerCall
{
    let perExtra = (thousand - single) / 999
    checks.append(
        TargetCheck(
            target: "each extra observer ≤ 2× a direct closure call",
            measured: "\(ns(perExtra)) per extra observer ((1,000 − 1 observers) / 999) vs \(ns(direct)) "
                + "per call in a contiguous array without reference counting = \(formatRatio(perExtra / direct))",
            passed: perExtra <= 2 * direct))
    checks.append(
        TargetCheck(
            target: "each extra observer ≤ 1.5× a direct closure call (the goal of the one-way rework, issue #41)",
            measured: "\(ns(perExtra)) vs \(ns(direct)) = \(formatRatio(perExtra / direct))",
            passed: perExtra <= 1.5 * direct))
}
if let crowd, let baseline = crowd.heraldBaseline, let crowded = crowd.heraldCrowded {
    let change = (crowded / baseline - 1) * 100
    checks.append(
        TargetCheck(
            target: "10,000 observers of other types leave a post within 10% of baseline",
            measured: "\(ns(crowded)) vs \(ns(baseline)) = \(String(format: "%+.1f%%", change))",
            passed: change <= 10))
}
if let unrelatedFamilies, let baseline = unrelatedFamilies.baseline, let crowded = unrelatedFamilies.withFamilies {
    let change = (crowded / baseline - 1) * 100
    checks.append(
        TargetCheck(
            target: "10 observers of unrelated protocols leave a post to 1 observer within 10% of baseline",
            measured: "\(ns(crowded)) vs \(ns(baseline)) = \(String(format: "%+.1f%%", change))",
            passed: change <= 10))
}
for result in registrations {
    for (name, value) in [("observe(every:)", result.family), ("observeAll", result.tap)] {
        guard let value, let plain = result.plain else { continue }
        checks.append(
            TargetCheck(
                target: "\(name) + cancel ≤ 3× observe + cancel, \(result.seenTypes.formatted) types seen",
                measured: "\(ns(value)) vs \(ns(plain)) = \(formatRatio(value / plain))",
                passed: value <= 3 * plain))
    }
}
if let burst {
    checks.append(
        TargetCheck(
            target: "async burst: one hop per batch, not per notification",
            measured: "\(burst.heraldHops.formatted) hops for \(burst.hopsBurstSize.formatted) posts",
            passed: burst.heraldHops * 10 <= burst.hopsBurstSize))
    if let herald = burst.herald.nanosecondsPerNotification, let dispatch = burst.dispatch.nanosecondsPerNotification {
        checks.append(
            TargetCheck(
                target: "async burst ≥ 5× the throughput of one DispatchQueue.async per notification",
                measured: "\(ns(herald)) vs \(ns(dispatch)) per notification = \(formatRatio(dispatch / herald))",
                passed: dispatch >= 5 * herald,
                limit: "the drain job that the queue runs again reads, without the mailbox's lock, whether "
                    + "the poster is still adding items, and gives the queue back while it is (at most 64 "
                    + "times in a row). When the two threads land on cores that share less, or the poster "
                    + "is descheduled, the drain catches up, takes a few items at a time, and the two "
                    + "pass the mailbox's lock back and forth."))
    }
    if let herald = burst.herald.nanosecondsPerNotification {
        if let message = burst.asyncMessage.nanosecondsPerNotification {
            checks.append(
                TargetCheck(
                    target: "async burst ≥ 20× the throughput of AsyncMessage",
                    measured: "\(ns(herald)) vs \(ns(message)) per notification = \(formatRatio(message / herald))",
                    passed: message >= 20 * herald))
        } else {
            checks.append(
                TargetCheck(
                    target: "async burst ≥ 20× the throughput of AsyncMessage",
                    measured: "AsyncMessage \(typedMessagesMissing)", passed: nil))
        }
    }
}
if burst != nil || mainBurst != nil || soak != nil {
    let inversions = (burst?.herald.inversions ?? 0) + (mainBurst?.herald.inversions ?? 0) + (soak?.inversions ?? 0)
    let lost = (burst?.herald.lost ?? 0) + (mainBurst?.herald.lost ?? 0)
    checks.append(
        TargetCheck(
            target: "async delivery keeps order",
            measured: "\(inversions) inversions, \(lost) lost (serial queue, main queue, soak)",
            passed: inversions == 0 && lost == 0))
}
if let flood, let worst = flood.heraldWorst {
    var measured = String(format: "Herald worst wait %.1f ms", worst)
    if let median = flood.heraldMedian { measured += String(format: " (median %.2f ms)", median) }
    if let dispatch = flood.dispatchWorst {
        measured += String(format: "; one DispatchQueue.main.async per notification: %.1f ms", dispatch)
    }
    checks.append(
        TargetCheck(
            target: "main-queue fairness: a flood of \(settings.floodSize.formatted) posts delays a main-queue "
                + "block ≤ 16 ms",
            measured: measured + " (median of \(settings.floodRounds) runs)",
            passed: worst <= 16))
}
if let paced, let added = paced.heraldAddedMedian {
    var measured = String(format: "Herald %+.3f ms at the median", added)
    if let worst = paced.heraldAddedWorst { measured += String(format: ", %+.2f ms at worst", worst) }
    if let dispatch = paced.dispatchAddedMedian {
        measured += String(format: "; one DispatchQueue.main.async per notification: %+.3f ms at the median", dispatch)
    }
    checks.append(
        TargetCheck(
            target: "main-queue fairness: posts paced 1 per 5 µs add ≤ 0.1 ms to a main-queue block's median wait",
            measured: measured + " (vs the same pace without posts)",
            passed: added <= 0.1))
}
if let idle, let herald = idle.herald, let dispatch = idle.dispatch {
    checks.append(
        TargetCheck(
            target: "idle CPU: bursts of 10 posts with 1 ms pauses cost ≤ the process CPU of one "
                + "DispatchQueue.async per notification",
            measured: "\(ns(herald)) vs \(ns(dispatch)) CPU per notification = \(formatRatio(herald / dispatch))",
            passed: herald <= dispatch))
    checks.append(
        TargetCheck(
            target: "idle CPU: bursts of 10 posts cost ≤ 0.9× one DispatchQueue.async per notification (the goal of "
                + "the one-way rework, issue #41)",
            measured: "\(ns(herald)) vs \(ns(dispatch)) = \(formatRatio(herald / dispatch))",
            passed: herald <= 0.9 * dispatch))
}
if let roundTrip, let herald = roundTrip.herald, let bare = roundTrip.bare {
    checks.append(
        TargetCheck(
            target: "postAndWait to another queue ≤ 1.2× a bare DispatchQueue round trip",
            measured: "\(ns(herald)) vs \(ns(bare)) = \(formatRatio(herald / bare))",
            passed: herald <= 1.2 * bare))
}
let heapMissing = "not measured: this platform has no glibc mallinfo2"
if let bytes = perObserver?.heraldPosting {
    checks.append(
        TargetCheck(
            target: "an observer costs ≤ 150 B",
            measured: Memory.readsHeap
                ? "\(formatNumber(bytes)) B per posting-thread observer: token, observer, list slot and the "
                    + "handler's own closure context (it captures one value)"
                : heapMissing,
            passed: Memory.readsHeap ? bytes <= 150 : nil))
}
if let bytes = perQueued?.heraldBeyondPayload {
    checks.append(
        TargetCheck(
            target: "a queued notification costs ≤ 64 B plus its payload",
            measured: Memory.readsHeap ? "\(formatNumber(bytes)) B beyond the payload" : heapMissing,
            passed: Memory.readsHeap ? bytes <= 64 : nil))
}
if let soak {
    let target = "memory stays flat over a \(settings.soakSize.formatted)-notification soak"
    if Memory.readsHeap && Memory.readsResident {
        let heapGrowth = Double(soak.heapEnd) - Double(soak.heapStart)
        let residentGrowth = Double(soak.residentEnd) - Double(soak.residentStart)
        checks.append(
            TargetCheck(
                target: target,
                measured: String(
                    format: "heap %+.1f KiB, resident %+.1f KiB between the first and the last round",
                    heapGrowth / 1024, residentGrowth / 1024),
                passed: heapGrowth < 256 * 1024 && residentGrowth < 4 * 1024 * 1024))
    } else {
        checks.append(
            TargetCheck(
                target: target, measured: "not measured: this platform has no glibc mallinfo2 or /proc/self/statm",
                passed: nil))
    }
}

print("")
print("DESIGN targets:")
print(targetLines(checks))

// Chart.
if let path = settings.svgPath, let one {
    var herald: [(Int, Double)] = []
    var foundation: [(Int, Double)] = []
    var direct: [(Int, Double)] = []
    if let value = one.heraldNanoseconds { herald.append((1, value)) }
    if let value = one.foundationNanoseconds { foundation.append((1, value)) }
    if let value = one.directNanoseconds { direct.append((1, value)) }
    for count in [10, 100, 1_000] {
        if let value = many[count]?.heraldPost { herald.append((count, value)) }
        if let value = many[count]?.foundationPost { foundation.append((count, value)) }
        if let value = many[count]?.directPost { direct.append((count, value)) }
    }
    let chart = svgChart(
        title: "Synchronous post: cost per post against observer count",
        subtitle: machineDescription(),
        series: [
            ChartSeries(name: "NotificationCenter", color: "#c0392b", points: foundation.map { ($0.0, $0.1) }),
            ChartSeries(name: "Herald", color: "#1f6fb2", points: herald.map { ($0.0, $0.1) }),
            ChartSeries(name: "direct closure calls", color: "#7f8c8d", points: direct.map { ($0.0, $0.1) }),
        ])
    do {
        try chart.write(toFile: path, atomically: true, encoding: .utf8)
        print("")
        print("Chart written to \(path)")
    } catch {
        FileHandle.standardError.write(Data("could not write \(path): \(error)\n".utf8))
        exit(1)
    }
}

print("")
print(String(format: "Run time: %.1f s", Double(nowNanoseconds() - runStart) / 1e9))
exit(settings.strict && checks.contains(where: \.missed) ? 1 : 0)

/// The machine, as the README's table should name it.
func machineDescription() -> String {
    var model = "unknown CPU"
    if let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
        let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
        let colon = line.firstIndex(of: ":")
    {
        model = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    var system = utsname()
    uname(&system)
    let release = withUnsafeBytes(of: &system.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let machine = withUnsafeBytes(of: &system.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let memory = Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824
    return "\(model), \(cores) cores, \(String(format: "%.0f", memory)) GiB, Linux \(release) \(machine)"
}
