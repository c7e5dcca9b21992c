import Foundation
import ModelFormats
import TestSupport
import Testing

/// The neutral format sniffer: what a file is, from its first bytes or a folder's structure.
@Suite struct FormatSnifferTests {
  static let hdf5: [UInt8] = [0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A]

  @Test func headersByContent() {
    #expect(FormatSniffer.kind(ofHeader: Self.hdf5 + [0, 0], name: "weights.bin") == .hdf5)
    // HDF5 after a 512-byte user block.
    #expect(FormatSniffer.kind(ofHeader: [UInt8](repeating: 0, count: 512) + Self.hdf5, name: "x") == .hdf5)
    #expect(FormatSniffer.kind(ofHeader: Array("PK\u{3}\u{4}rest".utf8), name: "model.keras") == .zipArchive)
    #expect(FormatSniffer.kind(ofHeader: [0x1C, 0, 0, 0] + Array("TFL3".utf8), name: "m") == .tensorFlowLite)
    // Core ML: specificationVersion (field 1), then the description (field 2) starting with an input (field 1).
    #expect(
      FormatSniffer.kind(ofHeader: [0x08, 0x04, 0x12, 0x05, 0x0A, 0x03, 0x0A, 0x01, 0x78], name: "model.bin")
        == .coreMLModel)
    // A description of 128 bytes or more has a two-byte length.
    #expect(
      FormatSniffer.kind(ofHeader: [0x08, 0x04, 0x12, 0x80, 0x01, 0x0A, 0x03], name: "model.bin") == .coreMLModel)
    // ONNX: ir_version, then producer_name text.
    #expect(FormatSniffer.kind(ofHeader: [0x08, 0x07, 0x12, 0x07] + Array("pytorch".utf8), name: "model.bin") == .onnx)
    #expect(FormatSniffer.kind(ofHeader: Array("  {\"class_name\": 1}".utf8), name: "m.json") == .json)
    #expect(FormatSniffer.kind(ofHeader: Array("some notes\n".utf8), name: "m.h5") == .text)
    // A web page saved under the model's name is HTML, whatever its extension.
    #expect(
      FormatSniffer.kind(ofHeader: Array("\n<!DOCTYPE html>\n<html lang=\"en\">".utf8), name: "model.onnx") == .html)
    #expect(FormatSniffer.kind(ofHeader: Array("<HTML><HEAD><TITLE>404".utf8), name: "model.h5") == .html)
    #expect(FormatSniffer.kind(ofHeader: Array("<!-- saved page -->\n<html>".utf8), name: "m.onnx") == .html)
    #expect(FormatSniffer.kind(ofHeader: Array("<svg>not a page".utf8), name: "m.onnx") == .text)
    #expect(FormatSniffer.kind(ofHeader: [], name: "m.h5") == .empty)
    #expect(FormatSniffer.kind(ofHeader: [0x00, 0xFF, 0x13], name: "m.h5") == .unknown)
  }

  @Test func pathsAndFolders() throws {
    #expect(
      try FormatSniffer.kind(ofPath: Fixtures.url("coremltools/digits_cnn_program.mlpackage").path) == .coreMLPackage)
    #expect(try FormatSniffer.kind(ofPath: Fixtures.url("coremltools/digits_cnn.mlmodel").path) == .coreMLModel)
    #expect(try FormatSniffer.kind(ofPath: Fixtures.url("keras_zip/functional.keras").path) == .zipArchive)
    #expect(try FormatSniffer.kind(ofPath: Fixtures.url("tfkeras215").path) == .folder)
    #expect(throws: FormatSniffer.Failure.notFound(path: "/nonexistent/x")) {
      try FormatSniffer.kind(ofPath: "/nonexistent/x")
    }
    #expect(throws: FormatSniffer.Failure.self) { try FormatSniffer.kind(ofPath: "/dev/null") }
  }
}

/// One JSON value for parsed configs and written documents.
@Suite struct JSONValueTests {
  @Test func parsedObjectsAreSortedAndEqual() throws {
    let a = try JSONValue.parse(#"{"b": [1, 2.5, true, null], "a": {"z": "x", "y": 1}}"#)
    let b = try JSONValue.parse(#"{"a": {"y": 1, "z": "x"}, "b": [1, 2.5, true, null]}"#)
    #expect(a == b)
    #expect(a["a"]?["z"]?.string == "x" && a["b"]?.array?.count == 4 && a["b"]?.array?[1].double == 2.5)
    #expect(a["b"]?.array?[0].int == 1 && a["b"]?.array?[2].bool == true && a["b"]?.array?[3].isNull == true)
    #expect(
      a.rendered
        == "{\n  \"a\": {\n    \"y\": 1,\n    \"z\": \"x\"\n  },\n  \"b\": [\n    1,\n    2.5,\n    true,\n    null\n  ]\n}"
    )
  }

  @Test func documentsKeepTheirOrder() {
    let document = JSONValue.object([
      ("schema", .string("x/1")), ("count", .number(.nan)), ("a", .optional(nil as String?)),
    ])
    #expect(document.rendered == "{\n  \"schema\": \"x/1\",\n  \"count\": null,\n  \"a\": null\n}")
    #expect(JSONValue.quoted("tab\there \u{1}") == #""tab\there \u0001""#)
  }
}
