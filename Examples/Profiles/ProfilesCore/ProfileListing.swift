import Foundation

/// Which profiles a list shows: everyone, or one gender. Combines with a ``ProfileSort``.
public enum ProfileFilter: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case all
    case male
    case female

    /// Only `gender`, or everyone for nil.
    public init(gender: Gender?) {
        switch gender {
        case .male?: self = .male
        case .female?: self = .female
        case nil: self = .all
        }
    }

    /// The gender shown, nil for everyone.
    public var gender: Gender? {
        switch self {
        case .all: nil
        case .male: .male
        case .female: .female
        }
    }

    public func includes(_ profile: Profile) -> Bool {
        gender.map { $0 == profile.gender } ?? true
    }

    public var description: String {
        switch self {
        case .all: "Everyone"
        case .male: "Male"
        case .female: "Female"
        }
    }
}

/// The order of a list. ``id`` (the order profiles were added in) is the default and what
/// clearing returns to; the others break ties by id, so the order is always the same. The raw
/// values are the web app's sort menu values.
public enum ProfileSort: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case id
    case ageAscending = "age-asc"
    case ageDescending = "age-desc"
    case nameAscending = "name-asc"
    case nameDescending = "name-desc"

    /// Whether `a` comes before `b`.
    public func areInIncreasingOrder(_ a: Profile, _ b: Profile) -> Bool {
        let primary: ComparisonResult = switch self {
        case .id: .orderedSame
        case .ageAscending: Self.compare(a.age, b.age)
        case .ageDescending: Self.compare(b.age, a.age)
        case .nameAscending: Self.compareNames(a.name, b.name)
        case .nameDescending: Self.compareNames(b.name, a.name)
        }
        if primary != .orderedSame { return primary == .orderedAscending }
        if a.id != b.id { return a.id < b.id }
        return (a.identifier ?? "") < (b.identifier ?? "")
    }

    public var description: String {
        switch self {
        case .id: "Added first"
        case .ageAscending: "Youngest first"
        case .ageDescending: "Oldest first"
        case .nameAscending: "Name A–Z"
        case .nameDescending: "Name Z–A"
        }
    }

    private static func compare(_ a: Int, _ b: Int) -> ComparisonResult {
        a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
    }

    /// Names compare ignoring case and accents (as people read them), then exactly, so that the
    /// order does not depend on the machine's locale.
    private static func compareNames(_ a: String, _ b: String) -> ComparisonResult {
        let folded = a.compare(b, options: [.caseInsensitive, .diacriticInsensitive])
        guard folded == .orderedSame else { return folded }
        return a == b ? .orderedSame : (a < b ? .orderedAscending : .orderedDescending)
    }
}

extension Sequence where Element == Profile {
    /// The profiles a list shows: those `filter` includes, in `sort`'s order.
    ///
    /// ```swift
    /// let oldestWomen = profiles.visible(filter: .female, sort: .ageDescending)
    /// ```
    public func visible(filter: ProfileFilter = .all, sort: ProfileSort = .id) -> [Profile] {
        self.filter(filter.includes).sorted(by: sort.areInIncreasingOrder)
    }
}
