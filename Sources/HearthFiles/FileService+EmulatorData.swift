import Foundation
import HearthAccess
import HearthCore
import HearthStorage
import NIOCore

/// The files part of an emulators:export directory (`storage_export/`, docs/specs/emulator-suite.md
/// §2.5): `buckets.json`, `blobs/<id>` and `metadata/<id>.json`, as firebase-tools' Storage emulator
/// writes and reads it.
extension FileService {
    /// What an import brought in, and what it could not.
    package struct ImportReport: Sendable {
        package var buckets = 0
        package var objects = 0
        package var problems: [String] = []
    }

    /// Writes every bucket and object into `directory` (which must not exist yet).
    package func exportEmulatorData(to directory: URL) async throws -> Int {
        let fileManager = FileManager.default
        let blobsDirectory = directory.appendingPathComponent("blobs")
        let metadataDirectory = directory.appendingPathComponent("metadata")
        try fileManager.createDirectory(at: blobsDirectory, withIntermediateDirectories: true)
        try fileManager.createDirectory(at: metadataDirectory, withIntermediateDirectories: true)
        let buckets = try await catalog.buckets().map(\.name)
        let bucketList = JSONValue.object([("buckets", .array(buckets.map { .object([("id", .string($0))]) }))])
        try Data(bucketList.jsonText.utf8).write(to: directory.appendingPathComponent("buckets.json"))
        var count = 0
        for bucket in buckets {
            var after: String?
            while true {
                let page = try await catalog.objects(bucket: bucket, prefix: "", after: after, limit: 1000)
                guard let last = page.last else { break }
                for object in page {
                    let exported = try await Self.exportObject(object, blobs: blobs, into: directory) {
                        try await catalog.object(bucket: object.bucket, name: object.name)
                    }
                    if exported { count += 1 }
                }
                after = last.name
            }
        }
        return count
    }

    /// Writes `object`'s bytes and metadata into the export `directory`; false when it was deleted
    /// meanwhile. An object overwritten or deleted while the export runs has lost the blob it was
    /// listed with: it is looked up again (`lookAgain`) and exported as it is now, or left out if it is
    /// gone. A blob missing under an object that still names it is an error.
    static func exportObject(
        _ object: StoredObject, blobs: BlobStore, into directory: URL, lookAgain: () async throws -> StoredObject?
    ) async throws -> Bool {
        let fileManager = FileManager.default
        var current = object
        while true {
            // A fresh name per object, as the emulator's: object names can be long or clash as paths.
            let diskName = UUID().uuidString.lowercased()
            let source = blobs.blobPath(current.blob)
            do {
                try fileManager.copyItem(
                    at: URL(fileURLWithPath: source), to: directory.appendingPathComponent("blobs").appendingPathComponent(diskName)
                )
            } catch where !fileManager.fileExists(atPath: source) {
                guard let now = try await lookAgain() else { return false }
                guard now.blob != current.blob else {
                    throw EmulatorFilesError("The bytes of gs://\(current.bucket)/\(current.name) are missing from \(source); the export stopped.")
                }
                current = now
                continue
            }
            let metadataFile = directory.appendingPathComponent("metadata").appendingPathComponent(diskName + ".json")
            try Data(Self.emulatorMetadata(current).jsonText.utf8).write(to: metadataFile)
            return true
        }
    }

    /// Reads `storage_export/` as any firebase-tools version wrote it (the metadata and blob files are
    /// paired by their path under `metadata/` and `blobs/`; the object's bucket and name come from the
    /// metadata). Objects keep their content type, custom metadata, download tokens and times; sizes and
    /// hashes are those of the bytes.
    package func importEmulatorData(from directory: URL) async throws -> ImportReport {
        var report = ImportReport()
        let fileManager = FileManager.default
        let bucketsFile = directory.appendingPathComponent("buckets.json")
        guard let bucketData = fileManager.contents(atPath: bucketsFile.path) else {
            throw EmulatorFilesError("\(bucketsFile.path) is missing: a storage export has buckets.json, blobs/ and metadata/")
        }
        guard let buckets = try? JSONValue(parsing: bucketData)["buckets"]?.arrayValue else {
            throw EmulatorFilesError("\(bucketsFile.path) is not a list of buckets ({\"buckets\": [{\"id\": …}]})")
        }
        for bucket in buckets.compactMap({ $0["id"]?.stringValue }) {
            _ = try await createBucket(bucket)
            report.buckets += 1
        }
        let metadataDirectory = directory.appendingPathComponent("metadata")
        let blobsDirectory = directory.appendingPathComponent("blobs")
        guard let walker = fileManager.enumerator(atPath: metadataDirectory.path), fileManager.fileExists(atPath: blobsDirectory.path) else {
            report.problems.append("no metadata/ or blobs/ directory in \(directory.path): no objects imported")
            return report
        }
        let paths = walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".json") }.sorted()
        for path in paths {
            let metadataFile = metadataDirectory.appendingPathComponent(path)
            let blobFile = blobsDirectory.appendingPathComponent(String(path.dropLast(".json".count)))
            guard let data = fileManager.contents(atPath: metadataFile.path), let metadata = try? JSONValue(parsing: data),
                let bucket = metadata["bucket"]?.stringValue, var name = metadata["name"]?.stringValue
            else {
                report.problems.append("metadata/\(path): not an object's metadata (needs bucket and name)")
                continue
            }
            guard fileManager.fileExists(atPath: blobFile.path) else {
                report.problems.append("metadata/\(path): its bytes (blobs/\(path.dropLast(5))) are missing")
                continue
            }
            // Exports written on Windows separate folders with backslashes.
            if !name.contains("/"), name.contains("\\") { name = name.replacingOccurrences(of: "\\", with: "/") }
            do {
                try Self.checkName(name)
                if try await catalog.bucket(bucket) == nil { _ = try await createBucket(bucket) }
                let written = try await blobs.write(FileChunks(path: blobFile.path))
                var object = StoredObject(
                    bucket: bucket, name: name, blob: written.blob, size: written.size,
                    contentType: metadata["contentType"]?.stringValue ?? "application/octet-stream",
                    md5Hash: written.md5Hash, crc32c: written.crc32c,
                    generation: metadata["generation"]?.wholeNumber ?? nextGeneration(),
                    metageneration: metadata["metageneration"]?.wholeNumber ?? 1,
                    time: metadata["timeCreated"]?.rfc3339Milliseconds ?? Int64(clock.wallMilliseconds)
                )
                object.updated = metadata["updated"]?.rfc3339Milliseconds ?? object.timeCreated
                object.cacheControl = metadata["cacheControl"]?.stringValue
                object.contentDisposition = metadata["contentDisposition"]?.stringValue
                object.contentEncoding = metadata["contentEncoding"]?.stringValue
                object.contentLanguage = metadata["contentLanguage"]?.stringValue
                var custom: [String: String] = [:]
                if case .object(let members)? = metadata["customMetadata"] {
                    for (key, value) in members where value != .null { custom[key] = value.stringValue ?? value.jsonText }
                }
                var tokens = metadata["downloadTokens"]?.arrayValue?.compactMap(\.stringValue) ?? []
                if let listed = custom.removeValue(forKey: "firebaseStorageDownloadTokens") {
                    tokens += listed.split(separator: ",").map { String($0) }.filter { !tokens.contains($0) }
                }
                object.metadata = custom
                object.downloadTokens = tokens
                let replaced = try await catalog.put(object)
                if let replaced, replaced.blob != object.blob { await blobs.remove(replaced.blob) }
                report.objects += 1
            } catch {
                report.problems.append("metadata/\(path) (\(bucket)/\(name)): \(error)")
            }
        }
        return report
    }

    /// True if any bucket holds an object.
    package func hasObjects() async throws -> Bool {
        for bucket in try await catalog.buckets() where !(try await catalog.objects(bucket: bucket.name, prefix: "", after: nil, limit: 1).isEmpty) {
            return true
        }
        return false
    }

    /// An object's metadata as the Storage emulator exports it (`StoredFileMetadata`'s JSON).
    static func emulatorMetadata(_ object: StoredObject) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("name", .string(object.name)), ("bucket", .string(object.bucket)),
            ("generation", .number(Double(object.generation))), ("metageneration", .number(Double(object.metageneration))),
            ("contentType", .string(object.contentType ?? "application/octet-stream")), ("storageClass", .string("STANDARD")),
        ]
        for (key, value) in [
            ("contentDisposition", object.contentDisposition), ("contentEncoding", object.contentEncoding),
            ("contentLanguage", object.contentLanguage), ("cacheControl", object.cacheControl),
        ] {
            if let value { members.append((key, .string(value))) }
        }
        members.append(("downloadTokens", .array(object.downloadTokens.map(JSONValue.string))))
        members.append(("customMetadata", .object(object.metadata.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })))
        members.append(("timeCreated", .string(ObjectMetadata.timestamp(object.timeCreated))))
        members.append(("updated", .string(ObjectMetadata.timestamp(object.updated))))
        members.append(("size", .number(Double(object.size))))
        members.append(("md5Hash", .string(object.md5Hash)))
        // The emulator keeps CRC32C as a decimal number in text, not base64.
        members.append(("crc32c", .string(String(object.crc32c))))
        return .object(members)
    }
}

/// A storage export that cannot be read or written, with what is wrong.
package struct EmulatorFilesError: Error, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = description }
}

/// A file's bytes in chunks, for ``BlobStore/write(_:limit:)``.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let path: String

    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle?
        mutating func next() async throws -> ByteBuffer? {
            guard let handle else { throw EmulatorFilesError("cannot open the file") }
            guard let data = try handle.read(upToCount: 1 << 20), !data.isEmpty else {
                try? handle.close()
                return nil
            }
            return ByteBuffer(bytes: data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: FileHandle(forReadingAtPath: path)) }
}
