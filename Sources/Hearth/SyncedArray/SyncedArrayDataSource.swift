public import Foundation
import Synchronization

/// A table or collection view's data source over a ``SyncedArray`` — FirebaseUI's
/// `FUITableViewDataSource` without UIKit: the row count and the element at an index path, and each
/// change of the array as the row update a table view applies (insert, delete, reload, move).
///
/// It becomes the array's delegate and keeps the array alive, and keeps `bind`'s closure until
/// ``unbind()``: capture the screen weakly in it (or unbind when the screen goes), else the screen
/// and the data source keep each other alive. Updates arrive on the database's callback queue (the main queue by default, where
/// UIKit wants them), after ``numberOfRows(inSection:)`` already counts them.
///
/// ```swift
/// let dataSource = SyncedArrayDataSource(array: SyncedArray(query: messages, decoding: Message.self))
/// dataSource.bind { [weak tableView] update in
///     guard let tableView else { return }
///     switch update {
///     case .insert(let paths): tableView.insertRows(at: paths, with: .automatic)
///     case .delete(let paths): tableView.deleteRows(at: paths, with: .automatic)
///     case .reload(let paths): tableView.reloadRows(at: paths, with: .none)
///     case .move(let from, let to): tableView.moveRow(at: from, to: to)
///     }
/// }
/// // UITableViewDataSource:
/// func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int {
///     dataSource.numberOfRows(inSection: section)
/// }
/// func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell {
///     let message = dataSource.element(at: indexPath)
///     …
/// }
/// ```
public final class SyncedArrayDataSource<Element: Sendable>: SyncedArrayDelegate, Sendable {
    /// The array the rows come from.
    public let array: SyncedArray<Element>
    /// The section the rows are in.
    public let section: Int
    private let onUpdate = Mutex<(@Sendable (SyncedArrayRowUpdate) -> Void)?>(nil)

    /// Rows of `array` in `section`.
    public init(array: SyncedArray<Element>, section: Int = 0) {
        self.array = array
        self.section = section
    }

    /// Starts the array and calls `update` with each change as a row update, until ``unbind()``.
    public func bind(_ update: @escaping @Sendable (SyncedArrayRowUpdate) -> Void) {
        onUpdate.withLock { $0 = update }
        array.delegate = self
        array.start()
    }

    /// Stops the array and the updates.
    public func unbind() {
        array.stop()
        array.delegate = nil
        onUpdate.withLock { $0 = nil }
    }

    /// One section.
    public var numberOfSections: Int { 1 }

    /// The array's count in the data source's section, else 0.
    public func numberOfRows(inSection section: Int) -> Int {
        section == self.section ? array.count : 0
    }

    /// The element of the row at `indexPath`.
    public func element(at indexPath: IndexPath) -> Element {
        array[indexPath[1]]
    }

    public func syncedArray(_ array: SyncedArray<Element>, didApply change: SyncedArrayChange<Element>) {
        guard let update = onUpdate.withLock({ $0 }) else { return }
        let paths = change.indexPaths(inSection: section)
        switch change {
        case .inserted: update(.insert(paths))
        case .updated: update(.reload(paths))
        case .removed: update(.delete(paths))
        case .moved: update(.move(from: paths[0], to: paths[1]))
        }
    }
}

/// One row update of a ``SyncedArrayDataSource``, as a table view applies it.
public enum SyncedArrayRowUpdate: Equatable, Sendable {
    case insert([IndexPath])
    case delete([IndexPath])
    case reload([IndexPath])
    case move(from: IndexPath, to: IndexPath)
}
