import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Hearth
import HearthCore
import Synchronization
import Testing

/// The Storage client against a live server's file service (Firebase Storage's `/v0` API): uploads
/// (multipart and resumable, with progress, pause, cancel and a dropped connection), downloads,
/// metadata, download URLs, listing, deletion, and storage rules deciding with the signed-in user's token.
@Suite struct LiveStorageTests {
    /// Storage for a fresh client of the live server (callbacks on the client's private queue).
    static func storage(_ url: String) throws -> (Storage, Database) {
        let database = try makeClient(url)
        return (Storage.storage(database: database), database)
    }

    /// Deterministic bytes that differ from position to position.
    static func bytes(_ count: Int, seed: UInt8 = 7) -> Data {
        var data = Data(count: count)
        var state = UInt32(seed) &* 2_654_435_761
        data.withUnsafeMutableBytes { buffer in
            for index in buffer.indices {
                state = state &* 1_664_525 &+ 1_013_904_223
                buffer[index] = UInt8(truncatingIfNeeded: state >> 24)
            }
        }
        return data
    }

    static func code(_ work: () async throws -> Void) async -> StorageErrorCode? {
        do {
            try await work()
            return nil
        } catch {
            return (error as? StorageError)?.code
        }
    }

    /// A GET with no credentials, as a browser following a download URL.
    static func plainGet(_ url: URL) async throws -> (Int, Data) {
        let (data, response) = try await URLSession.shared.data(from: url)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    static func port(of url: String) -> Int { URLComponents(string: url)?.port ?? 0 }

    /// Replaces the storage rules with the admin credential (`owner` in emulator mode).
    static func setRules(_ source: String, serverURL: String) async throws {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port(of: serverURL))/.settings/storage.rules")!)
        request.httpMethod = "PUT"
        request.httpBody = Data(source.utf8)
        request.setValue("Bearer owner", forHTTPHeaderField: "Authorization")
        let (body, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode
        #expect(status == 200, "rules refused: \(String(decoding: body, as: UTF8.self))")
    }

    @Test func putDataThenGetDataRoundTripsWithMetadataAndCustomMetadata() async throws {
        try await LiveServer.run(files: true) { url, _ in
            let (storage, _) = try Self.storage(url)
            #expect(storage.bucket == "demo.appspot.com")
            let ref = storage.reference().child("notes").child("/2024//hello world+plus.txt")
            #expect(ref.fullPath == "notes/2024/hello world+plus.txt")
            #expect(ref.name == "hello world+plus.txt")
            #expect(ref.bucket == "demo.appspot.com")
            #expect(ref.description == "gs://demo.appspot.com/notes/2024/hello world+plus.txt")
            #expect(ref.parent()?.fullPath == "notes/2024")
            #expect(ref.root().fullPath == "" && ref.root().parent() == nil)
            #expect(storage.reference(withPath: "notes/2024/hello world+plus.txt") == ref)
            #expect(storage.reference(forURL: "gs://demo.appspot.com/notes/2024/hello world+plus.txt") == ref)

            let metadata = StorageMetadata()
            metadata.contentType = "text/plain; charset=utf-8"
            metadata.cacheControl = "public, max-age=60"
            metadata.contentLanguage = "en"
            metadata.customMetadata = ["owner": "ada", "topic": "engines ✓"]
            let text = Data("Hello, Hearth storage ✓\n".utf8)
            let stored = try await ref.putDataAsync(text, metadata: metadata)
            #expect(stored.path == ref.fullPath)
            #expect(stored.name == "hello world+plus.txt")
            #expect(stored.bucket == "demo.appspot.com")
            #expect(stored.size == Int64(text.count))
            #expect(stored.contentType == "text/plain; charset=utf-8")
            #expect(stored.cacheControl == "public, max-age=60")
            #expect(stored.contentLanguage == "en")
            #expect(stored.customMetadata == ["owner": "ada", "topic": "engines ✓"])
            #expect(stored.md5Hash?.isEmpty == false)
            #expect(stored.generation > 0 && stored.metageneration == 1)
            #expect(abs((stored.timeCreated ?? .distantPast).timeIntervalSinceNow) < 60)
            #expect(stored.storageReference == ref)

            #expect(try await ref.getData(maxSize: 1 << 20) == text)
            let read = try await ref.getMetadata()
            #expect(read.md5Hash == stored.md5Hash && read.generation == stored.generation)
            #expect(read.customMetadata == stored.customMetadata)

            // The completion form, and an empty object.
            let empty = storage.reference(withPath: "notes/empty.bin")
            let done = Recorder()
            empty.putData(Data()) { metadata, error in done.append("\(metadata?.size ?? -1) \(error.map { "\($0)" } ?? "ok")") }
            #expect(await done.wait(count: 1) == ["0 ok"])
            #expect(try await empty.getData(maxSize: 10) == Data())
            let fetched = Recorder()
            ref.getData(maxSize: 100) { data, error in fetched.append(data.map { String(decoding: $0, as: UTF8.self) } ?? "\(error!)") }
            #expect(await fetched.wait(count: 1) == ["Hello, Hearth storage ✓\n"])
        }
    }

    @Test func updateMetadataSendsOnlyChangesAndRemovesWhatWasCleared() async throws {
        try await LiveServer.run(files: true) { url, _ in
            let (storage, _) = try Self.storage(url)
            let ref = storage.reference(withPath: "docs/spec.json")
            let initial = StorageMetadata()
            initial.contentType = "application/json"
            initial.contentLanguage = "fr"
            initial.customMetadata = ["keep": "1", "drop": "2"]
            let first = try await ref.putDataAsync(Data(#"{"a":1}"#.utf8), metadata: initial)

            let change = try await ref.getMetadata()
            change.cacheControl = "no-store"
            change.contentLanguage = nil
            change.customMetadata?["drop"] = nil
            change.customMetadata?["added"] = "3"
            let updated = try await ref.updateMetadata(change)
            #expect(updated.cacheControl == "no-store")
            #expect(updated.contentLanguage == nil)
            #expect(updated.contentType == "application/json")
            #expect(updated.customMetadata == ["keep": "1", "added": "3"])
            #expect(updated.metageneration == first.metageneration + 1)
            #expect(updated.generation == first.generation)

            // A fresh StorageMetadata sets fields and merges custom keys.
            let fresh = StorageMetadata()
            fresh.contentDisposition = "attachment"
            fresh.customMetadata = ["more": "4"]
            let merged = try await ref.updateMetadata(fresh)
            #expect(merged.contentDisposition == "attachment")
            #expect(merged.cacheControl == "no-store")
            #expect(merged.customMetadata == ["keep": "1", "added": "3", "more": "4"])
            let again = try await ref.getMetadata()
            #expect(again.metageneration == first.metageneration + 2)
            #expect(await Self.code { _ = try await storage.reference(withPath: "docs/missing").updateMetadata(fresh) } == .objectNotFound)
        }
    }

    @Test func aMultiMegabyteFileGoesResumableInDoublingChunksWithProgressTo100Percent() async throws {
        try await LiveServer.run(files: true) { url, _ in
            let (storage, _) = try Self.storage(url)
            let wire = StorageWire(storage.transport)
            storage.transport = wire
            let size = 3 * 1024 * 1024 + 12_345
            let content = Self.bytes(size)
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-storage-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("talk.mp4")
            try content.write(to: file)

            let ref = storage.reference(withPath: "videos/talk.mp4")
            let progress = Recorder()
            let task = ref.putFile(from: file)
            task.observe(.progress) { snapshot in
                progress.append("\(snapshot.completedUnitCount)/\(snapshot.totalUnitCount) \(snapshot.progress?.fractionCompleted ?? -1)")
            }
            let outcome = Recorder()
            task.observe(.success) { snapshot in outcome.append("success \(snapshot.metadata?.size ?? -1)") }
            task.observe(.failure) { snapshot in outcome.append("failure \(snapshot.error.map { "\($0)" } ?? "")") }
            // Four requests and a 3 MiB finalize (checksums, fsyncs, the catalog's commit) on the blocking
            // pool every suite shares: inside a whole test run on two cores this test has taken 4 to 154 s
            // in CI, and its upload alone once more than 30 s.
            #expect(await outcome.wait(count: 1, seconds: 180) == ["success \(size)"])
            #expect(task.snapshot.status == .success)
            #expect(task.snapshot.metadata?.contentType == "video/mp4")

            let events = progress.all.map { $0.split(separator: " ") }
            let completed = events.compactMap { Int64($0[0].split(separator: "/")[0]) }
            let fractions = events.compactMap { Double($0[1]) }
            #expect(completed.count >= 4, "\(progress.all)")
            #expect(zip(completed, completed.dropFirst()).allSatisfy { $0 <= $1 }, "\(progress.all)")
            #expect(completed.last == Int64(size))
            #expect(fractions.last == 1.0)
            #expect(Set(completed).count >= 4)
            #expect(events.allSatisfy { $0[0].hasSuffix("/\(size)") })

            // start, chunks of 256 KiB, 512 KiB, 1 MiB, then the rest with finalize.
            let commands = wire.commands
            #expect(commands.first?.command == "start")
            #expect(commands.dropFirst().map(\.command) == ["upload", "upload", "upload", "upload, finalize"], "\(commands)")
            #expect(commands.dropFirst().map(\.bytes) == [262_144, 524_288, 1_048_576, size - 262_144 - 524_288 - 1_048_576])

            #expect(try await ref.getData(maxSize: Int64(size)) == content)
            let copy = folder.appendingPathComponent("copy/talk.mp4")
            let written = try await ref.writeAsync(toFile: copy)
            #expect(written == copy)
            #expect(try Data(contentsOf: copy) == content)
            #expect(try FileManager.default.contentsOfDirectory(atPath: copy.deletingLastPathComponent().path) == ["talk.mp4"])
        }
    }

    @Test func putDataAsyncReportsProgressAndAnEightMegabyteChunkCapHolds() async throws {
        try await LiveServer.run(files: true) { url, _ in
            let (storage, database) = try Self.storage(url)
            let wire = StorageWire(storage.transport)
            storage.transport = wire
            storage.uploadChunkSizeBytes = 512 << 10
            let content = Self.bytes(2 * 1024 * 1024, seed: 3)
            let fractions = Recorder()
            let metadata = try await storage.reference(withPath: "blobs/two-mb").putDataAsync(content) { progress in
                fractions.append(String(progress?.fractionCompleted ?? -1))
            }
            await drain(database)
            #expect(metadata.size == Int64(content.count))
            #expect(fractions.all.last == "1.0")
            // 256 KiB, then 512 KiB (the cap) for the rest.
            #expect(wire.commands.dropFirst().map(\.bytes) == [262_144, 524_288, 524_288, 524_288, 262_144])
            #expect(try await storage.reference(withPath: "blobs/two-mb").getData(maxSize: 4 << 20) == content)
        }
    }

    @Test func aCancelledUploadFailsWithCancelledAndStoresNothing() async throws {
        try await LiveServer.run(files: true) { url, _ in
            let (storage, _) = try Self.storage(url)
            let wire = StorageWire(storage.transport)
            storage.transport = wire
            let ref = storage.reference(withPath: "big/cancelled.bin")
            let task = ref.putData(Self.bytes(4 * 1024 * 1024))
            let outcome = Recorder()
            task.observe(.progress) { snapshot in
                if snapshot.completedUnitCount > 0 { task.cancel() }
            }
            task.observe(.success) { _ in outcome.append("success") }
            task.observe(.failure) { snapshot in outcome.append("failure \((snapshot.error as? StorageError)?.code.rawValue ?? 0)") }
            #expect(await outcome.wait(count: 1) == ["failure -13040"])
            #expect(task.snapshot.status == .failure)
            #expect((task.snapshot.error as? StorageError)?.code == .cancelled)
            #expect(task.snapshot.completedUnitCount < 4 * 1024 * 1024)
            #expect(wire.commands.map(\.command).contains("cancel"))
            #expect(!wire.commands.map(\.command).contains("upload, finalize"))
            #expect(await Self.code { _ = try await ref.getMetadata() } == .objectNotFound)
            #expect(try await storage.reference(withPath: "big").listAll().items.isEmpty)

            // Cancelling the awaiting Swift task cancels an async upload too.
            let awaiting = Task { try await storage.reference(withPath: "big/also.bin").putDataAsync(Self.bytes(4 * 1024 * 1024)) }
            await waitUntil { wire.commands.contains { $0.command == "upload" } }
            awaiting.cancel()
            let code = await Self.code { _ = try await awaiting.value }
            #expect(code == .cancelled)
            #expect(await Self.code { _ = try await storage.reference(withPath: "big/also.bin").getMetadata() } == .objectNotFound)
        }
    }

    @Test func pauseHoldsTheNextChunkAndResumeFinishes() async throws {
        try await LiveServer.run(files: true) { url, _ in
            let (storage, _) = try Self.storage(url)
            let wire = StorageWire(storage.transport)
            storage.transport = wire
            let content = Self.bytes(1024 * 1024 + 1, seed: 9)
            let ref = storage.reference(withPath: "paused/file.bin")
            let task = ref.putData(content)
            let events = Recorder()
            task.observe(.progress) { snapshot in
                if snapshot.completedUnitCount == 262_144 { task.pause() }
            }
            task.observe(.pause) { snapshot in events.append("pause \(snapshot.completedUnitCount)") }
            task.observe(.success) { _ in events.append("success") }
            #expect(await events.wait(count: 1) == ["pause 262144"])
            let sentWhilePaused = wire.commands.count
            try await Task.sleep(nanoseconds: 300_000_000)  // a negative check: nothing may move while paused
            #expect(wire.commands.count <= sentWhilePaused + 1)  // at most the chunk already in flight
            #expect(task.snapshot.status == .pause)
            task.resume()
            #expect(await events.wait(count: 2) == ["pause 262144", "success"])
            #expect(try await ref.getData(maxSize: 2 << 20) == content)
        }
    }

    @Test func aDroppedConnectionDuringAChunkIsQueriedAndResumed() async throws {
        try await LiveServer.run(files: true) { url, _ in
            let (storage, _) = try Self.storage(url)
            // The second chunk reaches the server but its answer is lost; the fourth never leaves.
            let wire = StorageWire(storage.transport, failures: [2: .afterSending, 4: .beforeSending])
            storage.transport = wire
            let content = Self.bytes(3 * 1024 * 1024, seed: 5)
            let metadata = try await storage.reference(withPath: "flaky/upload.bin").putDataAsync(content)
            #expect(metadata.size == Int64(content.count))
            let commands = wire.commands.map(\.command)
            #expect(commands.filter { $0 == "query" }.count == 2, "\(commands)")
            #expect(commands.last == "upload, finalize")
            #expect(try await storage.reference(withPath: "flaky/upload.bin").getData(maxSize: 4 << 20) == content)
        }
    }

    @Test func getDataBeyondMaxSizeFailsWithDownloadSizeExceeded() async throws {
        try await LiveServer.run(files: true) { url, _ in
            let (storage, _) = try Self.storage(url)
            let ref = storage.reference(withPath: "sized/ten.bin")
            _ = try await ref.putDataAsync(Self.bytes(10))
            #expect(await Self.code { _ = try await ref.getData(maxSize: 9) } == .downloadSizeExceeded)
            #expect(await Self.code { _ = try await ref.getData(maxSize: 0) } == .downloadSizeExceeded)
            #expect(try await ref.getData(maxSize: 10) == Self.bytes(10))
            let big = storage.reference(withPath: "sized/big.bin")
            _ = try await big.putDataAsync(Self.bytes(600_000))
            #expect(await Self.code { _ = try await big.getData(maxSize: 500_000) } == .downloadSizeExceeded)
            #expect(await Self.code { _ = try await storage.reference(withPath: "sized/none").getData(maxSize: 10) } == .objectNotFound)
        }
    }

    @Test func aDownloadURLWorksWithoutCredentials() async throws {
        try await LiveServer.run(files: true) { url, _ in
            let (storage, _) = try Self.storage(url)
            let ref = storage.reference(withPath: "shared/photo 1+2.png")
            let content = Self.bytes(5000)
            _ = try await ref.putDataAsync(content)
            let download = try await ref.downloadURL()
            #expect(download.absoluteString.hasPrefix("http://127.0.0.1:\(Self.port(of: url))/v0/b/demo.appspot.com/o/shared%2Fphoto%201%2B2.png?alt=media&token="))
            let (status, body) = try await Self.plainGet(download)
            #expect(status == 200)
            #expect(body == content)
            #expect(storage.reference(forURL: download.absoluteString) == ref)
            let viaCompletion = Recorder()
            ref.downloadURL { url, error in viaCompletion.append(url?.absoluteString ?? "\(error!)") }
            #expect(await viaCompletion.wait(count: 1) == [download.absoluteString])
        }
    }

    @Test func listAllFoldsFoldersAndListPagesThroughEverything() async throws {
        try await LiveServer.run(files: true) { url, _ in
            let (storage, _) = try Self.storage(url)
            let names = ["gallery/a.jpg", "gallery/b.jpg", "gallery/c.jpg", "gallery/2023/x.jpg", "gallery/2023/y.jpg",
                         "gallery/2024/deep/z.jpg", "gallery/d.jpg", "gallery/e.jpg", "other/o.jpg"]
            for name in names { _ = try await storage.reference(withPath: name).putDataAsync(Data(name.utf8)) }
            let gallery = storage.reference(withPath: "gallery")
            let all = try await gallery.listAll()
            #expect(all.prefixes.map(\.fullPath) == ["gallery/2023", "gallery/2024"])
            #expect(all.items.map(\.fullPath) == ["gallery/a.jpg", "gallery/b.jpg", "gallery/c.jpg", "gallery/d.jpg", "gallery/e.jpg"])
            #expect(all.items.first?.name == "a.jpg")
            #expect(all.pageToken == nil)
            let root = try await storage.reference().listAll()
            #expect(root.prefixes.map(\.fullPath) == ["gallery", "other"])
            #expect(root.items.isEmpty)

            var pages: [[String]] = []
            var page = try await gallery.list(maxResults: 2)
            pages.append(page.prefixes.map(\.fullPath) + page.items.map(\.fullPath))
            while let token = page.pageToken {
                page = try await gallery.list(maxResults: 2, pageToken: token)
                pages.append(page.prefixes.map(\.fullPath) + page.items.map(\.fullPath))
            }
            #expect(pages.allSatisfy { $0.count <= 2 })
            #expect(pages.count >= 4)
            #expect(Set(pages.joined()) == Set(all.prefixes.map(\.fullPath) + all.items.map(\.fullPath)))
            #expect(pages.joined().count == 7)
            #expect(await Self.code { _ = try await gallery.list(maxResults: 0) } == .invalidArgument)
            #expect(await Self.code { _ = try await gallery.list(maxResults: 1001) } == .invalidArgument)
            let viaCompletion = Recorder()
            gallery.list(maxResults: 3) { result, error in viaCompletion.append("\(result?.items.count ?? -1) \(result?.pageToken != nil)") }
            #expect(await viaCompletion.wait(count: 1) == ["1 true"])
        }
    }

    @Test func deleteThenTheObjectIsNotFound() async throws {
        try await LiveServer.run(files: true) { url, _ in
            let (storage, _) = try Self.storage(url)
            let ref = storage.reference(withPath: "trash/gone.txt")
            _ = try await ref.putDataAsync(Data("bye".utf8))
            let download = try await ref.downloadURL()
            try await ref.delete()
            #expect(await Self.code { _ = try await ref.getMetadata() } == .objectNotFound)
            #expect(await Self.code { _ = try await ref.getData(maxSize: 100) } == .objectNotFound)
            #expect(await Self.code { try await ref.delete() } == .objectNotFound)
            #expect(try await Self.plainGet(download).0 == 404)
            #expect(try await storage.reference(withPath: "trash").listAll().items.isEmpty)
            let viaCompletion = Recorder()
            ref.delete { error in viaCompletion.append("\((error as? StorageError)?.code.rawValue ?? 0)") }
            #expect(await viaCompletion.wait(count: 1) == ["-13010"])
            #expect(await Self.code { try await storage.reference().delete() } == .invalidArgument)

            // As an NSError: Firebase's description naming the object, the object and bucket, the
            // HTTP status and the server's answer.
            do {
                _ = try await ref.getMetadata()
                Issue.record("a deleted object's metadata was read")
            } catch {
                let error = error as NSError
                #expect(error.domain == StorageErrorDomain)
                #expect(error.localizedDescription == "Object trash/gone.txt does not exist.")
                #expect(error.userInfo["object"] as? String == "trash/gone.txt")
                #expect(error.userInfo["bucket"] as? String == "demo.appspot.com")
                #expect(error.userInfo["ResponseErrorCode"] as? Int == 404)
                #expect((error.userInfo["ResponseBody"] as? String)?.contains("404") == true)
            }
        }
    }

    @Test func anUploadSendsTheMetadataAsItWasWhenItStarted() async throws {
        try await LiveServer.run(files: true) { url, _ in
            let (storage, _) = try Self.storage(url)
            let ref = storage.reference(withPath: "notes/first.txt")
            let metadata = StorageMetadata()
            metadata.contentType = "text/plain"
            let task = ref.putData(Data("first".utf8), metadata: metadata)
            // The caller's object changes at once; the upload already has its own copy.
            metadata.contentType = "application/json"
            metadata.customMetadata = ["late": "yes"]
            let outcome = Recorder()
            task.observe(.success) { snapshot in outcome.append(snapshot.metadata?.contentType ?? "none") }
            #expect(await outcome.wait(count: 1) == ["text/plain"])
            let stored = try await ref.getMetadata()
            #expect(stored.contentType == "text/plain" && stored.customMetadata?["late"] == nil)
            #expect(metadata.contentType == "application/json", "the upload never writes to the caller's object")
        }
    }

    static let rules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /users/{uid}/{allPaths=**} {
              allow read: if request.auth != null;
              allow write: if request.auth != null && request.auth.uid == uid;
            }
          }
        }
        """

    @Test func rulesSeeTheSignedInUserAndRefusalsAreUnauthorized() async throws {
        try await LiveServer.run(identity: true, files: true) { url, _ in
            try await Self.setRules(Self.rules, serverURL: url)
            let (storage, database) = try Self.storage(url)
            let auth = Auth.auth(database: database)
            let uid = try await auth.signInAnonymously().user.uid
            let mine = storage.reference(withPath: "users/\(uid)/avatar.txt")
            _ = try await mine.putDataAsync(Data("me".utf8))
            #expect(try await mine.getData(maxSize: 10) == Data("me".utf8))
            let download = try await mine.downloadURL()

            let theirs = storage.reference(withPath: "users/someone-else/avatar.txt")
            #expect(await Self.code { _ = try await theirs.putDataAsync(Data("x".utf8)) } == .unauthorized)
            // Refused at finalize, after a resumable upload's bytes.
            #expect(await Self.code { _ = try await theirs.putDataAsync(Self.bytes(600_000)) } == .unauthorized)
            #expect(await Self.code { _ = try await storage.reference(withPath: "elsewhere/x").putDataAsync(Data("x".utf8)) } == .unauthorized)
            do {
                _ = try await theirs.putDataAsync(Data("x".utf8))
            } catch let error as StorageError {
                #expect(error.message == "Permission denied. No WRITE permission.")
                #expect(error.httpStatus == 403)
                #expect((error as NSError).domain == "FIRStorageErrorDomain")
                #expect((error as NSError).code == -13021)
            }

            try auth.signOut()
            #expect(await Self.code { _ = try await mine.getData(maxSize: 10) } == .unauthorized)
            #expect(await Self.code { _ = try await mine.getMetadata() } == .unauthorized)
            #expect(await Self.code { try await mine.delete() } == .unauthorized)
            #expect(await Self.code { _ = try await storage.reference(withPath: "users/\(uid)").listAll() } == .unauthorized)
            // The download token still lets anyone read it; without the token the rules refuse.
            #expect(try await Self.plainGet(download) == (200, Data("me".utf8)))
            let tokenless = URL(string: download.absoluteString.components(separatedBy: "&token=")[0])!
            #expect(try await Self.plainGet(tokenless).0 == 403)

            // A credential the server does not accept is unauthenticated.
            let (forged, forgedDatabase) = try Self.storage(url)
            forgedDatabase.authTokenProvider = { "not-a-valid-token" }
            #expect(await Self.code { _ = try await forged.reference(withPath: "users/x/y").getMetadata() } == .unauthenticated)

            _ = try await auth.signInAnonymously()
            #expect(await Self.code { _ = try await mine.getMetadata() } == nil)
            #expect(await Self.code { try await mine.delete() } == .unauthorized)  // another anonymous user
        }
    }

    @Test func aServerThatIsNotThereExhaustsTheRetryTime() async throws {
        let (storage, _) = try Self.storage("http://127.0.0.1:1?ns=demo")
        storage.maxOperationRetryTime = 0.6
        storage.maxUploadRetryTime = 0.6
        let started = Date()
        #expect(await Self.code { _ = try await storage.reference(withPath: "a/b").getMetadata() } == .retryLimitExceeded)
        #expect(await Self.code { _ = try await storage.reference(withPath: "a/b").putDataAsync(Data("x".utf8)) } == .retryLimitExceeded)
        #expect(Date().timeIntervalSince(started) < 30)
    }

    @Test func storageInstancesAreSharedPerDatabaseAndBucket() throws {
        let database = try makeClient("http://127.0.0.1:9?ns=shop-default-rtdb")
        let storage = Storage.storage(database: database)
        #expect(storage.bucket == "shop.appspot.com")
        #expect(Storage.storage(database: database) === storage)
        let other = Storage.storage(database: database, url: "gs://shop-uploads")
        #expect(other.bucket == "shop-uploads" && other !== storage)
        #expect(other.reference(withPath: "a").description == "gs://shop-uploads/a")
        storage.useEmulator(withHost: "localhost", port: 9199)
        #expect(storage.client.url(bucket: "b", path: "a/b c+d").absoluteString == "http://localhost:9199/v0/b/b/o/a%2Fb%20c%2Bd")
        #expect(StorageClient.encode("é!*'()~._-") == "%C3%A9!*'()~._-")
        #expect(storage.reference(forURL: "http://localhost:9199/v0/b/shop.appspot.com/o/a%2Fb%20c?alt=media").fullPath == "a/b c")
    }
}

/// Records the storage requests (upload commands and chunk sizes) and makes chosen chunk requests
/// fail as a dropped connection would: before the request leaves, or after the server has it.
final class StorageWire: HTTPTransport, Sendable {
    enum Failure: Sendable {
        case beforeSending
        case afterSending
    }

    struct Command: Sendable, Equatable, CustomStringConvertible {
        var command: String
        var bytes: Int
        var description: String { "\(command)(\(bytes))" }
    }

    let inner: any HTTPTransport
    /// Chunk number (1-based, counting `upload` commands) → how it fails.
    let failures: [Int: Failure]
    private let log = Mutex<(commands: [Command], chunks: Int)>(([], 0))

    init(_ inner: any HTTPTransport, failures: [Int: Failure] = [:]) {
        self.inner = inner
        self.failures = failures
    }

    var commands: [Command] { log.withLock { $0.commands } }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let command = request.value(forHTTPHeaderField: "X-Goog-Upload-Command")
        var failure: Failure?
        if let command {
            log.withLock { log in
                log.commands.append(Command(command: command, bytes: request.httpBody?.count ?? 0))
                if command.hasPrefix("upload") {
                    log.chunks += 1
                    failure = failures[log.chunks]
                }
            }
        }
        if failure == .beforeSending { throw URLError(.networkConnectionLost) }
        let result = try await inner.send(request)
        if failure == .afterSending { throw URLError(.networkConnectionLost) }
        return result
    }
}
