import CHDF5
import Foundation

/// A group in an open HDF5 file: attributes, subgroups and float datasets.
public struct HDF5Group {
  public let file: HDF5File
  /// The absolute path inside the file.
  public let path: String

  /// The path of a child object.
  public func childPath(_ name: String) -> String { path == "/" ? "/" + name : path + "/" + name }

  /// A subgroup, or nil when absent.
  public func group(_ name: String) -> HDF5Group? { file.group(childPath(name)) }

  /// Whether the group has this attribute.
  public func hasAttribute(_ name: String) -> Bool {
    H5Aexists_by_name(file.id, path, name, chdf5_p_default()) > 0
  }

  /// A scalar string attribute (fixed or variable length), or nil when absent.
  public func stringAttribute(_ name: String) throws -> String? {
    guard hasAttribute(name) else { return nil }
    let strings = try readStrings(attribute: name)
    guard let first = strings.first else { throw unreadable(name, "empty string attribute") }
    return first
  }

  /// A string-array attribute, also when Keras split it as `name0`, `name1`, ... because it was large.
  public func stringArrayAttribute(_ name: String) throws -> [String]? {
    if hasAttribute(name) { return try readStrings(attribute: name) }
    var chunks: [String] = []
    var index = 0
    while hasAttribute("\(name)\(index)") {
      chunks += try readStrings(attribute: "\(name)\(index)")
      index += 1
    }
    return index > 0 ? chunks : nil
  }

  /// Whether a dataset exists at a path relative to this group.
  public func hasDataset(_ relativePath: String) -> Bool {
    let absolute = childPath(relativePath)
    guard file.linkExists(absolute) else { return false }
    var info = H5O_info_t()
    return H5Oget_info_by_name1(file.id, absolute, &info, chdf5_p_default()) >= 0 && info.type == H5O_TYPE_DATASET
  }

  /// The most elements one dataset may declare (2^31, as `GraphLimits.maxElementCount` for tensors).
  public static let maxDatasetElements = 1 << 31
  /// How many times larger than its stored bytes a compressed (filtered) dataset may be once read:
  /// deflate cannot exceed about 1032:1.
  public static let maxCompressionRatio = 1100

  /// The size of the file on disk, for checking declared sizes against it.
  var fileSize: Int {
    ((try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? NSNumber)?.intValue ?? 0
  }

  /// The declared shape of a numeric dataset, checked against the limits but not read.
  public func datasetShape(_ relativePath: String) throws -> [Int] {
    try withDataset(relativePath) { dataset, absolute in try checkedShape(dataset, absolute) }
  }

  /// Reads a numeric dataset as float32, with its shape.
  ///
  /// The declared size is checked before anything is allocated: at most `maxDatasetElements`
  /// elements, and no more bytes than the dataset stores in the file (times `maxCompressionRatio`
  /// when it is compressed), so a small file cannot make the reader allocate terabytes.
  public func floatDataset(_ relativePath: String) throws -> (shape: [Int], values: [Float]) {
    try withDataset(relativePath) { dataset, absolute in
      let shape = try checkedShape(dataset, absolute)
      let count = shape.reduce(1, *)
      try checkStorage(dataset, absolute, elements: count)
      let type = H5Dget_type(dataset)
      defer { H5Tclose(type) }
      var values: [Float]
      let status: herr_t
      if H5Tget_class(type) == H5T_FLOAT && H5Tget_size(type) > 4 {
        // float64 is read as is and narrowed here: a value beyond float32's range becomes infinity
        // (which the converter refuses), never a silently clamped number.
        var wide = [Double](repeating: 0, count: count)
        status = wide.withUnsafeMutableBytes {
          H5Dread(dataset, chdf5_native_double(), chdf5_s_all(), chdf5_s_all(), chdf5_p_default(), $0.baseAddress)
        }
        values = wide.map { Float($0) }
      } else {
        values = [Float](repeating: 0, count: count)
        status = values.withUnsafeMutableBytes {
          H5Dread(dataset, chdf5_native_float(), chdf5_s_all(), chdf5_s_all(), chdf5_p_default(), $0.baseAddress)
        }
      }
      guard status >= 0 else { throw HDF5Error.unreadable(path: file.path, object: absolute, detail: "read failed") }
      return (shape, values)
    }
  }

  private func withDataset<T>(_ relativePath: String, _ body: (hid_t, String) throws -> T) throws -> T {
    let absolute = childPath(relativePath)
    guard hasDataset(relativePath) else { throw HDF5Error.missing(path: file.path, object: absolute) }
    let dataset = H5Dopen2(file.id, absolute, chdf5_p_default())
    guard dataset >= 0 else { throw HDF5Error.missing(path: file.path, object: absolute) }
    defer { H5Dclose(dataset) }
    let type = H5Dget_type(dataset)
    guard type >= 0 else { throw HDF5Error.unreadable(path: file.path, object: absolute, detail: "no datatype") }
    defer { H5Tclose(type) }
    let typeClass = H5Tget_class(type)
    guard typeClass == H5T_FLOAT || typeClass == H5T_INTEGER else {
      throw HDF5Error.unreadable(path: file.path, object: absolute, detail: "not a numeric dataset")
    }
    return try body(dataset, absolute)
  }

  /// The dataset's dimensions, each an exact `Int`, with at most `maxDatasetElements` elements in all.
  private func checkedShape(_ dataset: hid_t, _ absolute: String) throws -> [Int] {
    let space = H5Dget_space(dataset)
    guard space >= 0 else { throw HDF5Error.unreadable(path: file.path, object: absolute, detail: "no dataspace") }
    defer { H5Sclose(space) }
    let rank = Int(H5Sget_simple_extent_ndims(space))
    // HDF5 allows at most 32 dimensions.
    guard (0...32).contains(rank) else { throw HDF5Error.unreadable(path: file.path, object: absolute, detail: "dataspace rank \(rank)") }
    var dims = [hsize_t](repeating: 0, count: max(rank, 1))
    guard H5Sget_simple_extent_dims(space, &dims, nil) >= 0 else {
      throw HDF5Error.unreadable(path: file.path, object: absolute, detail: "unreadable dimensions")
    }
    let declared = dims.prefix(rank)
    var count = 1
    var shape: [Int] = []
    for dim in declared {
      let (product, overflow) = count.multipliedReportingOverflow(by: Int(exactly: dim) ?? Int.max)
      guard let size = Int(exactly: dim), !overflow, product <= Self.maxDatasetElements else {
        throw HDF5Error.unreadable(
          path: file.path, object: absolute, detail: "declared shape [\(declared.map { String($0) }.joined(separator: ", "))] has more than \(Self.maxDatasetElements) elements")
      }
      count = product
      shape.append(size)
    }
    return shape
  }

  /// Fails when the dataset declares more data than it stores in the file.
  private func checkStorage(_ dataset: hid_t, _ absolute: String, elements: Int) throws {
    guard elements > 0 else { return }
    let type = H5Dget_type(dataset)
    defer { H5Tclose(type) }
    let elementSize = max(Int(H5Tget_size(type)), 1)
    let (needed, overflow) = elements.multipliedReportingOverflow(by: elementSize)
    let stored = Int(exactly: H5Dget_storage_size(dataset)) ?? Int.max
    let plist = H5Dget_create_plist(dataset)
    let filters = plist >= 0 ? Int(H5Pget_nfilters(plist)) : 0
    if plist >= 0 { H5Pclose(plist) }
    let available = min(stored, fileSize)
    let (allowed, allowedOverflow) = available.multipliedReportingOverflow(by: filters > 0 ? Self.maxCompressionRatio : 1)
    guard !overflow, allowedOverflow || needed <= allowed else {
      throw HDF5Error.unreadable(
        path: file.path, object: absolute,
        detail: "declares \(elements) elements (\(needed) bytes) but the file stores only \(available) bytes for it")
    }
  }

  /// The names of the direct children (groups and datasets), in creation or name order.
  public func childNames() -> [String] {
    var names: [String] = []
    var index: hsize_t = 0
    while true {
      let length = H5Lget_name_by_idx(file.id, path, H5_INDEX_NAME, H5_ITER_INC, index, nil, 0, chdf5_p_default())
      guard length >= 0 else { break }
      var buffer = [CChar](repeating: 0, count: Int(length) + 1)
      H5Lget_name_by_idx(file.id, path, H5_INDEX_NAME, H5_ITER_INC, index, &buffer, Int(length) + 1, chdf5_p_default())
      names.append(String(cString: buffer))
      index += 1
    }
    return names
  }

  private func unreadable(_ name: String, _ detail: String) -> HDF5Error {
    .unreadable(path: file.path, object: childPath(name), detail: detail)
  }

  /// Reads every string of a string attribute; branches on variable- versus fixed-length storage.
  private func readStrings(attribute name: String) throws -> [String] {
    let attribute = H5Aopen_by_name(file.id, path, name, chdf5_p_default(), chdf5_p_default())
    guard attribute >= 0 else { throw HDF5Error.missing(path: file.path, object: childPath(name)) }
    defer { H5Aclose(attribute) }
    let type = H5Aget_type(attribute)
    defer { H5Tclose(type) }
    guard H5Tget_class(type) == H5T_STRING else { throw unreadable(name, "not a string attribute") }
    let space = H5Aget_space(attribute)
    defer { H5Sclose(space) }
    let points = H5Sget_simple_extent_npoints(space)
    guard points >= 0 else { throw unreadable(name, "unreadable dataspace") }
    let count = Int(max(points, 1))
    // Attribute data is stored uncompressed in the file: it cannot be larger than the file.
    let limit = fileSize
    guard count <= limit else { throw unreadable(name, "declares \(count) strings, more than the file can hold") }

    if H5Tis_variable_str(type) > 0 {
      let memoryType = H5Tcopy(chdf5_c_s1())
      defer { H5Tclose(memoryType) }
      H5Tset_size(memoryType, chdf5_variable())
      H5Tset_cset(memoryType, H5Tget_cset(type))
      var pointers = [UnsafeMutablePointer<CChar>?](repeating: nil, count: count)
      guard H5Aread(attribute, memoryType, &pointers) >= 0 else { throw unreadable(name, "read failed") }
      defer { for pointer in pointers { H5free_memory(pointer) } }
      return pointers.map { $0.map { String(cString: $0) } ?? "" }
    }

    let size = H5Tget_size(type)
    let (bytesNeeded, overflow) = size.multipliedReportingOverflow(by: count)
    guard size > 0, !overflow, bytesNeeded <= limit else {
      throw unreadable(name, "declares \(count) strings of \(size) bytes, more than the file holds")
    }
    let memoryType = H5Tcopy(type)
    defer { H5Tclose(memoryType) }
    var bytes = [UInt8](repeating: 0, count: size * count)
    guard H5Aread(attribute, memoryType, &bytes) >= 0 else { throw unreadable(name, "read failed") }
    return (0..<count).map { index in
      let slice = bytes[(index * size)..<((index + 1) * size)]
      let trimmed = slice.prefix { $0 != 0 }
      return String(decoding: trimmed, as: UTF8.self)
    }
  }
}
