import Foundation
import HearthAccess
import HearthCore
@testable import HearthServer
import Testing

/// The activity's shards (decision 0024): what threads record apart is counted, logged and scraped as one.
@Suite struct ServerActivityTests {
    private func request(_ kind: RequestRecord.Kind, namespace: String? = "demo", status: String = "200", milliseconds: Int = 2) -> RequestRecord {
        RequestRecord(transport: .http, method: "GET", path: "/a.json", namespace: namespace, status: status, duration: .milliseconds(milliseconds), kind: kind)
    }

    @Test func requestsRecordedOnManyThreadsAreCountedAndLoggedOnce() async {
        let activity = ServerActivity(clock: .system, shardCount: 4)
        let threads = 8, each = 500
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    // Plain threads, so the records land in different shards whatever the task pool does.
                    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                        Thread.detachNewThread {
                            for index in 0..<each {
                                activity.record(self.request(index % 3 == 0 ? .write : .read, namespace: thread % 2 == 0 ? "demo" : "other"))
                            }
                            done.resume()
                        }
                    }
                }
            }
        }
        let demo = activity.totals("demo"), other = activity.totals("other")
        #expect(demo.reads + demo.writes + other.reads + other.writes == threads * each)
        #expect(demo.writes == 4 * 167 && other.writes == 4 * 167)
        #expect(activity.totals("nowhere") == DatabaseTotals())
        // The newest `logCapacity`, numbered without a gap, oldest first.
        let log = activity.recentRequests(after: 0)
        #expect(log.map(\.sequence) == Array((threads * each - ServerActivity.logCapacity + 1)...(threads * each)))
        #expect(activity.recentRequests(after: threads * each - 3).map(\.sequence) == [threads * each - 2, threads * each - 1, threads * each])
        #expect(activity.recentRequests(after: threads * each).isEmpty)
    }

    @Test func aScrapeShowsTheTotalsAndTheNextAddsOnlyWhatCameSince() {
        let activity = ServerActivity(clock: .system, shardCount: 3)
        activity.record(request(.write, status: "200", milliseconds: 2))
        activity.record(request(.denied, status: "401", milliseconds: 7))
        activity.record(request(.read, namespace: nil, status: "404", milliseconds: 20_000))
        var text = String(decoding: activity.metricsText(namespaces: ["demo", "idle"]), as: UTF8.self)
        #expect(text.contains(#"hearth_writes_total{namespace="demo"} 1"# + "\n"))
        #expect(text.contains(#"hearth_reads_total{namespace="idle"} 0"# + "\n"))
        #expect(text.contains(#"hearth_denied_total{namespace="demo"} 1"#))
        #expect(text.contains(#"hearth_requests_total{transport="http",status="401"} 1"#))
        // Cumulative buckets: 2 ms is within 5 ms, 7 ms within 10 ms, 20 s only within +Inf.
        #expect(text.contains(#"hearth_request_duration_seconds_bucket{transport="http",le="0.001"} 0"#))
        #expect(text.contains(#"hearth_request_duration_seconds_bucket{transport="http",le="0.005"} 1"#))
        #expect(text.contains(#"hearth_request_duration_seconds_bucket{transport="http",le="0.01"} 2"#))
        #expect(text.contains(#"hearth_request_duration_seconds_bucket{transport="http",le="5.0"} 2"#))
        #expect(text.contains(#"hearth_request_duration_seconds_bucket{transport="http",le="+Inf"} 3"#))
        #expect(text.contains(#"hearth_request_duration_seconds_sum{transport="http"} 20.009"#))
        #expect(text.contains(#"hearth_request_duration_seconds_count{transport="websocket"} 0"#))
        #expect(text.components(separatedBy: "# TYPE hearth_request_duration_seconds histogram").count == 2)
        for _ in 0..<4 { activity.record(request(.write)) }
        text = String(decoding: activity.metricsText(), as: UTF8.self)
        #expect(text.contains(#"hearth_writes_total{namespace="demo"} 5"# + "\n"))
        #expect(text.contains(#"hearth_requests_total{transport="http",status="200"} 5"# + "\n"))
        text = String(decoding: activity.metricsText(), as: UTF8.self)
        #expect(text.contains(#"hearth_writes_total{namespace="demo"} 5"# + "\n"))
    }

    @Test func scrapesThatOverlapRecordingAndEachOtherNeverStepBack() async {
        let activity = ServerActivity(clock: .system, shardCount: 4)
        let recorders = 4, each = 3_000
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<(2 * recorders) {
                group.addTask {
                    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                        Thread.detachNewThread {
                            if index < recorders {
                                for _ in 0..<each { activity.record(self.request(.write)) }
                            } else {
                                // Scrapes racing each other and the recorders: a counter stepped back traps.
                                for _ in 0..<200 { _ = activity.metricsText(namespaces: ["demo"]) }
                            }
                            done.resume()
                        }
                    }
                }
            }
        }
        let text = String(decoding: activity.metricsText(), as: UTF8.self)
        #expect(text.contains(#"hearth_writes_total{namespace="demo"} \#(recorders * each)"# + "\n"))
        #expect(text.contains(#"hearth_request_duration_seconds_count{transport="http"} \#(recorders * each)"# + "\n"))
    }

    @Test func theMergedLogStopsBeforeANumberStillBeingLogged() {
        func logged(_ sequences: [Int]) -> [LoggedRequest] {
            sequences.map { LoggedRequest(sequence: $0, time: 0, record: request(.read)) }
        }
        // 4 was numbered in a shard read before it was logged: 5 and 6 wait for the next ask.
        #expect(ServerActivity.newest(of: [logged([1, 3, 5]), logged([2, 6])]).map(\.sequence) == [1, 2, 3])
        #expect(ServerActivity.newest(of: [logged([1, 3, 5]), logged([2, 4, 6])]).map(\.sequence) == [1, 2, 3, 4, 5, 6])
        // Only the newest `logCapacity`: an old entry an idle shard kept is left out, not taken for a gap.
        let capacity = ServerActivity.logCapacity
        let busy = logged(Array(11...(10 + capacity))), idle = logged([3])
        #expect(ServerActivity.newest(of: [idle, busy]).map(\.sequence) == Array(11...(10 + capacity)))
        #expect(ServerActivity.newest(of: [[], []]).isEmpty)
    }
}
