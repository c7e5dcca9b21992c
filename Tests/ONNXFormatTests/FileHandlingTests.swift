import Foundation
import ONNXFormat
import ONNXTestSupport
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Files that are not ONNX, files too large or not regular, and external tensor data.
@Suite struct FileHandlingTests {
  func write(_ bytes: [UInt8], _ name: String, in folder: URL) throws -> URL {
    let url = folder.appendingPathComponent(name)
    try Data(bytes).write(to: url)
    return url
  }

  @Test func otherFormatsSayWhatTheyAre() throws {
    let folder = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    let cases: [([UInt8], String)] = [
      (Array("<!DOCTYPE html>\n<html><head><title>model.onnx · GitHub</title>".utf8), "an HTML page"),
      (Array("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 1234\n".utf8), "a text file"),
      (Array("{\"format\": \"onnx\"}".utf8), "a JSON file"),
      ([], "an empty file"),
      ([0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0], "an HDF5 file"),
      (Array("PK\u{3}\u{4}rest".utf8), "a zip archive"),
    ]
    for (bytes, kind) in cases {
      let url = try write(bytes, "model.onnx", in: folder)
      #expect(throws: ONNXFormatError.notONNX(path: url.path, kind: kind)) { try ONNXModelReader.read(contentsOf: url) }
      let tensorFile = try write(bytes, "input_0.pb", in: folder)
      #expect(throws: ONNXFormatError.notONNX(path: tensorFile.path, kind: kind)) {
        try ONNXTensorReader.read(contentsOf: tensorFile)
      }
    }
    #expect(
      ONNXFormatError.notONNX(path: "/m/model.onnx", kind: "an HTML page").description
        == "/m/model.onnx: an HTML page, not an ONNX file")
  }

  @Test func unreadableFiles() throws {
    let folder = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    let missing = folder.appendingPathComponent("missing.onnx")
    #expect(throws: ONNXFormatError.unreadable(path: missing.path, detail: "No such file or directory")) {
      try ONNXModelReader.read(contentsOf: missing)
    }
    // A FIFO is refused without blocking.
    let fifo = folder.appendingPathComponent("pipe.onnx")
    #expect(mkfifo(fifo.path, 0o600) == 0)
    #expect(throws: ONNXFormatError.unreadable(path: fifo.path, detail: "not a regular file")) {
      try ONNXModelReader.read(contentsOf: fifo)
    }
    // A sparse file one byte over 2 GiB is refused before anything is read.
    let huge = folder.appendingPathComponent("huge.onnx")
    #expect(FileManager.default.createFile(atPath: huge.path, contents: nil))
    #expect(truncate(huge.path, off_t(ONNXLimits.maxFileSize + 1)) == 0)
    let error = #expect(throws: ONNXFormatError.self) { try ONNXModelReader.read(contentsOf: huge) }
    #expect(
      error?.description.contains("2147483649 bytes, more than the 2 GiB limit") == true, "\(String(describing: error))"
    )
  }

  /// A model whose initializer `W` (FLOAT, `dims`) lives in `weights.bin` at `offset`.
  func externalModel(dims: [Int64] = [2, 2], location: String = "weights.bin", offset: Int? = 8, length: Int? = 16)
    -> [UInt8]
  {
    let tensor = ONNXProtos.tensor(name: "W", dims: dims) { w in
      for (key, value) in [
        ("location", location), ("offset", offset.map(String.init)), ("length", length.map(String.init)),
      ] {
        guard let value else { continue }
        w.bytes(
          13,
          ProtoWire.message { e in
            e.string(1, key)
            e.string(2, value)
          })
      }
      w.int(14, 1)  // data_location EXTERNAL
    }
    return ONNXProtos.model(initializer: tensor)
  }

  @Test func externalDataIsReadInsideTheModelsFolder() throws {
    let root = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let folder = root.appendingPathComponent("model")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    _ = try write([UInt8](repeating: 0xEE, count: 8) + littleEndian([1, 2, 3, 4]) + [0xEE], "weights.bin", in: folder)
    _ = try write(Array("secret".utf8), "outside.bin", in: root)

    let good = try write(externalModel(), "model.onnx", in: folder)
    #expect(try ONNXModelReader.read(contentsOf: good).graph.initializers[0].floatValues() == [1, 2, 3, 4])
    // Without offset and length: the whole file, which must then be exactly the tensor's size.
    // Without a length the data runs to the end of the file, which must then be the tensor's size.
    let toEnd = modelRefusal(externalModel(offset: 8, length: nil), path: good.path, directory: folder)
    #expect(
      toEnd?.description.contains(
        "initializer 'W': external data file 'weights.bin' holds 17 bytes after offset 8 and gives no length; the tensor's values take 16"
      ) == true)
    _ = try write(littleEndian([5, 6, 7, 8]), "exact.bin", in: folder)
    #expect(
      try ONNXModelReader.read(bytes: externalModel(location: "exact.bin", offset: nil, length: nil), directory: folder)
        .graph.initializers[0].floatValues() == [5, 6, 7, 8])

    func refusal(_ bytes: [UInt8]) -> String {
      let url = try? write(bytes, "model.onnx", in: folder)
      return (#expect(throws: ONNXFormatError.self) { try ONNXModelReader.read(contentsOf: url ?? folder) })?
        .description ?? ""
    }
    #expect(
      refusal(externalModel(location: "../outside.bin")).contains(
        "initializer 'W': external data location '../outside.bin' leaves the model's folder (..)"))
    #expect(refusal(externalModel(location: "sub/../../outside.bin")).contains("leaves the model's folder"))
    #expect(
      refusal(externalModel(location: root.appendingPathComponent("outside.bin").path)).contains("is an absolute path"))
    #expect(
      refusal(externalModel(offset: 100)).contains(
        "external data file 'weights.bin': offset 100 lies past the end of the 25-byte file"))
    #expect(refusal(externalModel(offset: 16)).contains("16 bytes from offset 16 run past the end of the 25-byte file"))
    #expect(
      refusal(externalModel(length: 12)).contains("external_data length is 12 bytes; the tensor's values take 16"))
    #expect(refusal(externalModel(location: "missing.bin")).contains("external data file 'missing.bin' does not exist"))
    #expect(refusal(externalModel(location: "")).contains("external_data has no location"))
    let badOffset = ONNXProtos.model(
      initializer: ONNXProtos.tensor(name: "W", dims: [1]) { w in
        w.bytes(
          13,
          ProtoWire.message {
            $0.string(1, "location")
            $0.string(2, "weights.bin")
          })
        w.bytes(
          13,
          ProtoWire.message {
            $0.string(1, "offset")
            $0.string(2, "-8")
          })
        w.int(14, 1)
      })
    #expect(refusal(badOffset).contains("external_data offset '-8' is not a byte count"))
    // A symbolic link inside the folder that points outside it.
    try FileManager.default.createSymbolicLink(
      at: folder.appendingPathComponent("link.bin"), withDestinationURL: root.appendingPathComponent("outside.bin"))
    #expect(refusal(externalModel(location: "link.bin")).contains("outside the model's folder (a symbolic link?)"))
    // Bytes read from memory have no folder.
    #expect(modelRefusal(externalModel())?.description.contains("needs the model's folder") == true)
  }
}
