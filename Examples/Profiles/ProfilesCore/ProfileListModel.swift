import Foundation
import Hearth
import Observation

/// The view model a SwiftUI (or UIKit) profile list binds to: the live directory, the filter and
/// sort the person chose, the add form with its errors, the open profile, and what went wrong.
/// Every database call goes through its ``ProfileDirectory``.
///
/// For example, in SwiftUI:
/// ```swift
/// @State var model = ProfileListModel(directory: ProfileDirectory(database: .database(url: url)))
///
/// List(model.visibleProfiles) { profile in ProfileRow(profile) }
///     .task { model.start() }
/// Picker("Sort", selection: $model.sort) { ForEach(ProfileSort.allCases, id: \.self) { Text($0.description) } }
/// ```
@MainActor
@Observable
public final class ProfileListModel {
    public enum Phase: Equatable, Sendable {
        case loading
        case loaded
        /// The directory could not be read (for example the rules deny it); the message says why.
        case failed(String)
    }

    public let directory: ProfileDirectory

    /// Everyone, in id order.
    public private(set) var profiles: [Profile] = []
    /// Entries under `profiles/` that are not valid profiles (shown as a warning, not as rows).
    public private(set) var invalidEntries: [SnapshotDecodingError] = []
    public private(set) var phase: Phase = .loading
    /// Whether the client is connected (the web app's "Live" / "Reconnecting…").
    public private(set) var isOnline = false
    /// Push ids of the rows that changed in the last update, to highlight (none after the first).
    public private(set) var recentlyChanged: Set<String> = []

    public var filter: ProfileFilter = .all
    public var sort: ProfileSort = .id

    /// The add overlay's fields, and the messages from the last submit.
    public var form = ProfileForm()
    public private(set) var formErrors: ProfileValidationError?
    public private(set) var isSaving = false

    /// The push id of the profile open in the detail view.
    public var selectedKey: String?

    /// A short message to show for a moment ("Ada Lovelace was added.", "That profile was deleted.").
    public private(set) var notice: String?
    /// The last failure of an action (delete, hobbies, samples), worded for a person.
    public private(set) var errorMessage: String?

    @ObservationIgnored private var tasks: [Task<Void, Never>] = []

    public init(directory: ProfileDirectory) {
        self.directory = directory
    }

    // MARK: What the list shows

    /// The rows: ``profiles`` with ``filter`` and ``sort`` applied.
    public var visibleProfiles: [Profile] { profiles.visible(filter: filter, sort: sort) }

    /// Whether there is a filter or sort to clear.
    public var canClear: Bool { filter != .all || sort != .id }

    /// Everyone, in id order again.
    public func clearFilterAndSort() {
        filter = .all
        sort = .id
    }

    /// The open profile; nil when none is open or it was deleted.
    public var selected: Profile? { selectedKey.flatMap { key in profiles.first { $0.identifier == key } } }

    /// "8 people, 4 shown · changes appear live", as the web app's summary.
    public var summary: String {
        switch phase {
        case .loading: return "Loading the directory…"
        case .failed(let message): return message
        case .loaded:
            let total = profiles.count
            if total == 0 { return "Nobody here yet." }
            let shown = visibleProfiles.count
            return "\(total) \(total == 1 ? "person" : "people")\(shown != total ? ", \(shown) shown" : "") · changes appear live"
        }
    }

    // MARK: Following the directory

    /// Starts following the directory and the connection (again after ``stop()``).
    public func start() {
        guard tasks.isEmpty else { return }
        tasks.append(Task { [weak self, directory] in
            do {
                for try await update in directory.updates() {
                    guard let self else { return }
                    self.apply(update)
                }
            } catch {
                self?.phase = .failed(Self.describe(loadError: error))
            }
        })
        tasks.append(Task { [weak self, directory] in
            for await online in directory.connection() {
                guard let self else { return }
                self.isOnline = online
            }
        })
    }

    /// Stops following; the data shown stays.
    public func stop() {
        for task in tasks { task.cancel() }
        tasks = []
    }

    private func apply(_ update: ProfileUpdate) {
        let wasOpen = selected != nil
        profiles = update.list.profiles
        invalidEntries = update.list.invalid
        phase = .loaded
        recentlyChanged = Set(update.changes.compactMap { change in
            if case .removed = change { return nil }
            return change.profile?.identifier
        })
        if wasOpen, selected == nil {
            selectedKey = nil
            notice = "That profile was deleted."
        }
    }

    // MARK: Actions

    /// Validates ``form`` and adds the profile; on success clears the form and returns the profile,
    /// otherwise sets ``formErrors`` (or ``errorMessage`` when the server refused) and returns nil.
    @discardableResult
    public func submitForm() async -> Profile? {
        let content: NewProfile
        do {
            content = try form.validated()
        } catch {
            formErrors = error
            return nil
        }
        formErrors = nil
        isSaving = true
        defer { isSaving = false }
        do {
            let profile = try await directory.add(content)
            form = ProfileForm()
            notice = "\(profile.name) was added."
            return profile
        } catch {
            errorMessage = "Not saved: \(Self.describe(error))"
            return nil
        }
    }

    /// Deletes a profile (closing it if open).
    public func delete(_ profile: Profile) async {
        await perform("Could not delete") {
            try await self.directory.delete(profile)
            if self.selectedKey == profile.identifier { self.selectedKey = nil }
            self.notice = "\(profile.name) was deleted."
        }
    }

    /// Adds hobbies from comma-separated text (the detail view's field). Returns false, with
    /// ``errorMessage`` set, when a hobby is too long or the server refused.
    @discardableResult
    public func addHobbies(_ text: String, to profile: Profile) async -> Bool {
        await perform("Could not save the hobbies") { try await self.directory.addHobbies([text], to: profile) }
    }

    public func removeHobby(_ hobby: String, from profile: Profile) async {
        await perform("Could not remove the hobby") { try await self.directory.removeHobbies([hobby], from: profile) }
    }

    /// Loads the web app's sample people (what an empty directory offers).
    public func loadSamples() async {
        await perform("Could not load the samples") {
            try await self.directory.addSamples()
            self.notice = "Sample profiles loaded."
        }
    }

    public func dismissNotice() { notice = nil }

    public func dismissError() { errorMessage = nil }

    @discardableResult
    private func perform(_ what: String, _ action: () async throws -> Void) async -> Bool {
        do {
            try await action()
            errorMessage = nil
            return true
        } catch let error as ProfileValidationError {
            errorMessage = error.description
        } catch {
            errorMessage = "\(what): \(Self.describe(error))"
        }
        return false
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError {
            return error.code == .permissionDenied ? "the server refused it (its rules deny the change)." : error.message
        }
        return "\(error)"
    }

    static func describe(loadError error: any Error) -> String {
        if let error = error as? DatabaseError, error.code == .permissionDenied {
            return "This server does not let you read the directory (its rules deny it)."
        }
        return "The directory could not be loaded: \(describe(error))"
    }
}
