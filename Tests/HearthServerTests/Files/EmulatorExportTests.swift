import Foundation
@testable import HearthFiles
import HearthStorage
import Testing

/// A storage export taken while objects change: an object overwritten or deleted after it was listed
/// is exported as it is now, or left out, instead of failing the export.
struct EmulatorExportTests {
    static func exportDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString)")
        for folder in ["blobs", "metadata"] {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        return directory
    }

    static func object(_ blob: String, size: Int64, generation: Int64) -> StoredObject {
        StoredObject(bucket: "b", name: "n.txt", blob: blob, size: size, md5Hash: "", crc32c: 0, generation: generation, time: 0)
    }

    static func exported(_ directory: URL) throws -> [(bytes: String, metadata: String)] {
        try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("blobs").path).map { name in
            let bytes = try String(contentsOf: directory.appendingPathComponent("blobs/\(name)"), encoding: .utf8)
            let metadata = try String(contentsOf: directory.appendingPathComponent("metadata/\(name).json"), encoding: .utf8)
            return (bytes, metadata)
        }
    }

    @Test func anObjectChangedOrDeletedWhileExportedIsExportedAsItIsNow() async throws {
        let (blobs, root) = try BlobStoreTests.temporaryStore()
        defer { try? FileManager.default.removeItem(at: root) }
        let newer = try await blobs.write(BlobStoreTests.Chunks(bytes: Array("newer".utf8), chunk: 5))
        let listed = Self.object("0000aaaa-gone", size: 5, generation: 1)  // its blob was removed by the overwrite
        let now = Self.object(newer.blob, size: 5, generation: 2)

        let overwritten = try Self.exportDirectory()
        defer { try? FileManager.default.removeItem(at: overwritten) }
        #expect(try await FileService.exportObject(listed, blobs: blobs, into: overwritten) { now })
        let files = try Self.exported(overwritten)
        #expect(files.map(\.bytes) == ["newer"])
        #expect(files.first?.metadata.contains(#""generation":2"#) == true, "\(files)")

        let deleted = try Self.exportDirectory()
        defer { try? FileManager.default.removeItem(at: deleted) }
        #expect(try await FileService.exportObject(listed, blobs: blobs, into: deleted) { nil } == false)
        #expect(try Self.exported(deleted).isEmpty)

        // An object that still names a blob that is not there: the export says so.
        let broken = try Self.exportDirectory()
        defer { try? FileManager.default.removeItem(at: broken) }
        await #expect(throws: EmulatorFilesError.self) {
            try await FileService.exportObject(listed, blobs: blobs, into: broken) { listed }
        }
    }
}
