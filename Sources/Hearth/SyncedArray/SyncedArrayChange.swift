public import Foundation

/// One change to a ``SyncedArray``, as an index delta, with the element it concerns.
///
/// Applied in order to a copy of the array (``apply(to:)``), the changes always reproduce it, so a
/// table or collection view can animate them one by one:
/// ```swift
/// array.onChange = { change in
///     switch change {
///     case .inserted(_, let index): tableView.insertRows(at: [IndexPath(row: index, section: 0)], with: .automatic)
///     case .updated(_, let index): tableView.reloadRows(at: [IndexPath(row: index, section: 0)], with: .none)
///     case .removed(_, let index): tableView.deleteRows(at: [IndexPath(row: index, section: 0)], with: .automatic)
///     case .moved(_, let from, let to): tableView.moveRow(at: IndexPath(row: from, section: 0), to: IndexPath(row: to, section: 0))
///     }
/// }
/// ```
public enum SyncedArrayChange<Element> {
    /// `element` was inserted at `index`.
    case inserted(Element, at: Int)
    /// The element at `index` was replaced by `element` (the child's data changed).
    case updated(Element, at: Int)
    /// `element` was removed from `index`.
    case removed(Element, at: Int)
    /// `element` moved from index `from` to index `to` (indices of the array before and after the move).
    case moved(Element, from: Int, to: Int)

    /// The element the change concerns (for `removed`, the element that left).
    public var element: Element {
        switch self {
        case .inserted(let element, _), .updated(let element, _), .removed(let element, _), .moved(let element, _, _):
            element
        }
    }

    /// Applies the change to a copy of the array it was made on.
    public func apply(to array: inout [Element]) {
        switch self {
        case .inserted(let element, let index):
            array.insert(element, at: index)
        case .updated(let element, let index):
            array[index] = element
        case .removed(_, let index):
            array.remove(at: index)
        case .moved(let element, let from, let to):
            array.remove(at: from)
            array.insert(element, at: to)
        }
    }

    /// The change's index paths in `section` (for table and collection views): one for inserted, updated
    /// and removed; the source and the destination for moved.
    public func indexPaths(inSection section: Int = 0) -> [IndexPath] {
        switch self {
        case .inserted(_, let index), .updated(_, let index), .removed(_, let index):
            [IndexPath(indexes: [section, index])]
        case .moved(_, let from, let to):
            [IndexPath(indexes: [section, from]), IndexPath(indexes: [section, to])]
        }
    }
}

extension SyncedArrayChange: Sendable where Element: Sendable {}
extension SyncedArrayChange: Equatable where Element: Equatable {}
