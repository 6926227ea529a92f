/// A point in time, to the nanosecond, between 0001-01-01 and 9999-12-31 UTC (the range Firebase allows).
///
/// Calendar fields come from plain day arithmetic (proleptic Gregorian, UTC), so no Foundation calendar
/// is involved and evaluation stays cheap.
///
/// For example:
/// ```swift
/// let t = try RuleTimestamp(seconds: 86_400, nanos: 0)
/// t.civil  // (year: 1970, month: 1, day: 2)
/// t.text   // "1970-01-02T00:00:00Z"
/// ```
struct RuleTimestamp: Sendable, Hashable, Comparable {
    /// Seconds since 1970-01-01T00:00:00Z.
    private(set) var seconds: Int64
    /// 0 ..< 1_000_000_000.
    private(set) var nanos: Int32

    static let minimumSeconds: Int64 = -62_135_596_800  // 0001-01-01T00:00:00Z
    static let maximumSeconds: Int64 = 253_402_300_799  // 9999-12-31T23:59:59Z

    init(seconds: Int64, nanos: Int32) throws(EvaluationError) {
        guard seconds >= RuleTimestamp.minimumSeconds, seconds <= RuleTimestamp.maximumSeconds, nanos >= 0, nanos < 1_000_000_000 else {
            throw EvaluationError("timestamp out of range (0001-01-01 to 9999-12-31)")
        }
        self.seconds = seconds
        self.nanos = nanos
    }

    /// From seconds since 1970 as the server keeps time (microseconds are kept, rounding noise is not).
    init(unixTime: Double) {
        // NaN (which no clock gives, but a caller might) reads as 1970 rather than trapping.
        let finite = unixTime.isNaN ? 0 : unixTime
        let clamped = min(max(finite, Double(RuleTimestamp.minimumSeconds)), Double(RuleTimestamp.maximumSeconds))
        let whole = clamped.rounded(.down)
        let micros = Int32(((clamped - whole) * 1_000_000).rounded())
        seconds = Int64(whole)
        nanos = micros * 1000
        if nanos >= 1_000_000_000 {
            seconds += 1
            nanos -= 1_000_000_000
        }
    }

    static func < (a: RuleTimestamp, b: RuleTimestamp) -> Bool {
        (a.seconds, a.nanos) < (b.seconds, b.nanos)
    }

    var unixTime: Double { Double(seconds) + Double(nanos) / 1e9 }

    /// Milliseconds since 1970, rounded down.
    var millis: Int64 {
        let (quotient, remainder) = seconds.multipliedReportingOverflow(by: 1000)
        precondition(!remainder, "the range keeps millis within Int64")
        return quotient + Int64(nanos / 1_000_000)
    }

    static func fromMillis(_ millis: Int64) throws(EvaluationError) -> RuleTimestamp {
        var seconds = millis / 1000
        var remainder = millis % 1000
        if remainder < 0 {
            seconds -= 1
            remainder += 1000
        }
        return try RuleTimestamp(seconds: seconds, nanos: Int32(remainder) * 1_000_000)
    }

    static func date(year: Int64, month: Int64, day: Int64) throws(EvaluationError) -> RuleTimestamp {
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year) else {
            throw EvaluationError("invalid date \(year)-\(month)-\(day)")
        }
        return try RuleTimestamp(seconds: daysFromCivil(year: year, month: month, day: day) * 86_400, nanos: 0)
    }

    var days: Int64 { seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400 }
    var secondOfDay: Int64 { seconds - days * 86_400 }
    var civil: (year: Int64, month: Int64, day: Int64) { RuleTimestamp.civilFromDays(days) }
    var hours: Int64 { secondOfDay / 3600 }
    var minutes: Int64 { secondOfDay / 60 % 60 }
    var secondsOfMinute: Int64 { secondOfDay % 60 }
    /// 1 (Monday) through 7 (Sunday); 1970-01-01 was a Thursday.
    var dayOfWeek: Int64 { ((days % 7 + 7 + 3) % 7) + 1 }
    /// 1 through 366.
    var dayOfYear: Int64 { days - RuleTimestamp.daysFromCivil(year: civil.year, month: 1, day: 1) + 1 }

    func adding(_ duration: RuleDuration) throws(EvaluationError) -> RuleTimestamp {
        var nanos = Int64(self.nanos) + Int64(duration.nanos)
        var carry: Int64 = 0
        if nanos >= 1_000_000_000 {
            nanos -= 1_000_000_000
            carry = 1
        }
        let (sum, overflow) = seconds.addingReportingOverflow(duration.seconds)
        guard !overflow, !(sum + carry < sum) else { throw EvaluationError("timestamp out of range") }
        return try RuleTimestamp(seconds: sum + carry, nanos: Int32(nanos))
    }

    func subtracting(_ duration: RuleDuration) throws(EvaluationError) -> RuleTimestamp {
        try adding(try duration.negated())
    }

    /// `self - other` as a duration.
    func since(_ other: RuleTimestamp) throws(EvaluationError) -> RuleDuration {
        try RuleDuration(seconds: seconds - other.seconds, nanos: Int64(nanos) - Int64(other.nanos))
    }

    /// RFC 3339 in UTC: `2026-01-01T00:00:00Z`, with a fraction when there are nanoseconds.
    var text: String {
        let (year, month, day) = civil
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        var year4 = String(year)
        while year4.count < 4 { year4 = "0" + year4 }
        var result = "\(year4)-\(two(month))-\(two(day))T\(two(hours)):\(two(minutes)):\(two(secondsOfMinute))"
        if nanos != 0 {
            var fraction = String(nanos)
            while fraction.count < 9 { fraction = "0" + fraction }
            while fraction.hasSuffix("0") { fraction.removeLast() }
            result += "." + fraction
        }
        return result + "Z"
    }

    /// Parses RFC 3339 (`2026-01-01T00:00:00Z`, `2026-01-01T01:00:00.5+01:00`); nil if it is not one.
    static func parse(_ text: String) -> RuleTimestamp? {
        let b = Array(text.utf8)
        var i = 0
        func digits(_ count: Int) -> Int64? {
            guard i + count <= b.count else { return nil }
            var value: Int64 = 0
            for c in b[i..<(i + count)] {
                guard c >= 0x30, c <= 0x39 else { return nil }
                value = value * 10 + Int64(c - 0x30)
            }
            i += count
            return value
        }
        func literal(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c || (c == UInt8(ascii: "T") && (b[i] == UInt8(ascii: "t") || b[i] == 0x20)) else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), literal(UInt8(ascii: "-")), let month = digits(2), literal(UInt8(ascii: "-")), let day = digits(2),
            literal(UInt8(ascii: "T")), let hour = digits(2), literal(UInt8(ascii: ":")), let minute = digits(2),
            literal(UInt8(ascii: ":")), let second = digits(2),
            (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour < 24, minute < 60, second < 60
        else { return nil }
        var nanos: Int64 = 0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            var scale: Int64 = 100_000_000
            let start = i
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                nanos += Int64(b[i] - 0x30) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        var offset: Int64 = 0
        if i < b.count, b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            i += 1
        } else if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            let sign: Int64 = b[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let offsetHours = digits(2), literal(UInt8(ascii: ":")), let offsetMinutes = digits(2) else { return nil }
            offset = sign * (offsetHours * 3600 + offsetMinutes * 60)
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let seconds = daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return try? RuleTimestamp(seconds: seconds, nanos: Int32(nanos))
    }

    // MARK: Calendar arithmetic (Howard Hinnant's days-from-civil algorithms)

    static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// A signed length of time, to the nanosecond, within ±10,000 years (protobuf's Duration range).
///
/// For example:
/// ```swift
/// let hour = try RuleDuration.value(1, unit: "h")
/// hour.text  // "3600s"
/// ```
struct RuleDuration: Sendable, Hashable, Comparable {
    /// Whole seconds, rounded toward negative infinity; `nanos` adds to them.
    private(set) var seconds: Int64
    /// 0 ..< 1_000_000_000.
    private(set) var nanos: Int32

    static let limitSeconds: Int64 = 315_576_000_000

    /// Any seconds and nanoseconds (either may be negative), normalized.
    init(seconds: Int64, nanos: Int64) throws(EvaluationError) {
        var s = seconds
        var n = nanos
        let carry = n / 1_000_000_000
        n -= carry * 1_000_000_000
        if n < 0 {
            n += 1_000_000_000
            s = s &- 1
        }
        let (total, overflow) = s.addingReportingOverflow(carry)
        guard !overflow, total >= -RuleDuration.limitSeconds, total <= RuleDuration.limitSeconds else {
            throw EvaluationError("duration out of range")
        }
        self.seconds = total
        self.nanos = Int32(n)
    }

    static func < (a: RuleDuration, b: RuleDuration) -> Bool {
        (a.seconds, a.nanos) < (b.seconds, b.nanos)
    }

    /// `duration.value(n, unit)` with unit w, d, h, m, s, ms, us or ns.
    static func value(_ amount: Int64, unit: String) throws(EvaluationError) -> RuleDuration {
        let secondsPerUnit: [String: Int64] = ["w": 604_800, "d": 86_400, "h": 3600, "m": 60, "s": 1]
        if let factor = secondsPerUnit[unit] {
            let (seconds, overflow) = amount.multipliedReportingOverflow(by: factor)
            guard !overflow else { throw EvaluationError("duration out of range") }
            return try RuleDuration(seconds: seconds, nanos: 0)
        }
        let perSecond: Int64
        switch unit {
        case "ms": perSecond = 1000
        case "us": perSecond = 1_000_000
        case "ns": perSecond = 1_000_000_000
        default: throw EvaluationError("unknown duration unit '\(unit)' (use w, d, h, m, s, ms, us or ns)")
        }
        return try RuleDuration(seconds: amount / perSecond, nanos: (amount % perSecond) * (1_000_000_000 / perSecond))
    }

    func negated() throws(EvaluationError) -> RuleDuration {
        try RuleDuration(seconds: -seconds, nanos: -Int64(nanos))
    }

    func adding(_ other: RuleDuration) throws(EvaluationError) -> RuleDuration {
        try RuleDuration(seconds: seconds + other.seconds, nanos: Int64(nanos) + Int64(other.nanos))
    }

    var isNegative: Bool { seconds < 0 }

    /// Like protobuf's JSON form: "3600s", "1.5s", "-0.001s".
    var text: String {
        var value = self
        var sign = ""
        if isNegative, let positive = try? negated() {
            value = positive
            sign = "-"
        }
        var result = sign + String(value.seconds)
        if value.nanos != 0 {
            var fraction = String(value.nanos)
            while fraction.count < 9 { fraction = "0" + fraction }
            while fraction.hasSuffix("0") { fraction.removeLast() }
            result += "." + fraction
        }
        return result + "s"
    }
}
