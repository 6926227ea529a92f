import Foundation
@testable import Hearth
import HearthCore
import Testing

/// Every "now" and every wait of the SDK comes from the database's ``HearthClock``.
@Suite struct SDKClockTests {
    @Test func aTimestampAssignedInATransactionBlockIsTheClocksTime() {
        let data = MutableData(node: .empty, key: nil, now: { 1_234_567.4 })
        data.value = [".sv": "timestamp"]
        #expect(data.value as? Double == 1_234_567 || data.value as? Int == 1_234_567)
    }

    @Test func storageRetriesWaitOnTheDatabasesClock() async throws {
        let clock = SleepRecordingClock()
        let storage = try HTTPLayerTests.storage(ScriptedHTTPTransport([.drop, .answer(200, HTTPLayerTests.metadata)]), clock: clock)
        _ = try await storage.reference(withPath: "a/b").getMetadata()
        #expect(clock.pauses == [250])
    }
}
