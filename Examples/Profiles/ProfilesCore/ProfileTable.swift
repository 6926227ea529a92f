import Foundation
import Hearth

/// The directory as a table screen shows it, in the shape of a table view bound to a synchronized
/// array: every profile in id order through a ``SyncedArray``, each row's text and colour, and every
/// change made anywhere as the row update the table view animates.
///
/// For example, behind a `UITableView`:
/// ```swift
/// let table = ProfileTable(directory: directory)
/// table.start { [weak tableView] update in
///     guard let tableView else { return }
///     switch update {
///     case .insert(let paths): tableView.insertRows(at: paths, with: .automatic)
///     case .delete(let paths): tableView.deleteRows(at: paths, with: .automatic)
///     case .reload(let paths): tableView.reloadRows(at: paths, with: .none)
///     case .move(let from, let to): tableView.moveRow(at: from, to: to)
///     }
/// }
/// // numberOfRowsInSection: table.numberOfRows
/// // cellForRowAt: let row = table.row(at: indexPath); cell.textLabel?.text = row.title; …
/// ```
public final class ProfileTable: Sendable {
    /// The rows' source: the synchronized array of profiles and its table data source.
    public let dataSource: SyncedArrayDataSource<Profile>

    public init(directory: ProfileDirectory) {
        let query = directory.database.reference(withPath: ProfileDirectory.profilesPath).queryOrdered(byChild: "id")
        // An entry that is not a valid profile is left out of the rows (the array reports it).
        dataSource = SyncedArrayDataSource(array: SyncedArray(query: query) { try $0.decoded(as: Profile.self) })
    }

    /// Starts following the directory; `onUpdate` gets each change as a row update, on the
    /// database's callback queue, once ``numberOfRows`` and ``row(at:)`` reflect it.
    public func start(_ onUpdate: @escaping @Sendable (SyncedArrayRowUpdate) -> Void) {
        dataSource.bind(onUpdate)
    }

    /// Stops following the directory.
    public func stop() {
        dataSource.unbind()
    }

    public var numberOfRows: Int { dataSource.numberOfRows(inSection: 0) }

    /// The row at `indexPath` (section 0).
    public func row(at indexPath: IndexPath) -> ProfileRow {
        ProfileRow(dataSource.element(at: indexPath))
    }

    /// The profiles the rows show, in id order.
    public var profiles: [Profile] { dataSource.array.elements }
}

/// What one row of the profile table shows.
public struct ProfileRow: Equatable, Sendable {
    /// The row colours of the app: blue for male profiles, pink for female ones.
    public enum Background: String, Sendable {
        case blue, pink
    }

    /// The push id of the profile the row shows.
    public var key: String?
    /// "Ada Lovelace, 36".
    public var title: String
    /// The hobbies, comma-separated.
    public var subtitle: String
    public var background: Background
    public var imageURL: String?

    public init(_ profile: Profile) {
        key = profile.identifier
        title = "\(profile.name), \(profile.age)"
        subtitle = profile.hobbies.joined(separator: ", ")
        background = profile.gender == .male ? .blue : .pink
        imageURL = profile.imageURL
    }
}
