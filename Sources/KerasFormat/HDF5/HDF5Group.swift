import CHDF5
import Foundation

/// Limits on what one HDF5 object may claim; every size in the file is untrusted.
public enum HDF5Limits {
  /// Elements of one numeric dataset: 2^29 float32 values (2 GiB).
  public static let maximumDatasetElements = 1 << 29
  /// Dimensions of a dataset (libhdf5's own limit, H5S_MAX_RANK).
  public static let maximumRank = 32
  /// Strings in one string attribute.
  public static let maximumAttributeStrings = 1 << 20
  /// Bytes of one fixed-length string attribute (all its strings together): 256 MiB.
  public static let maximumAttributeBytes = 256 << 20
}

/// A float dataset as read: its values, or where its float32 values lie in the file.
public enum HDF5FloatDataset: Sendable, Equatable {
  case values(shape: [Int], values: [Float])
  /// `shape`'s element count of little-endian float32 values at byte `offset` of the file.
  case located(shape: [Int], offset: Int)
}

/// A group in an open HDF5 file: attributes, subgroups and float datasets.
public struct HDF5Group: @unchecked Sendable {
  public let file: HDF5File
  /// The absolute path inside the file.
  public let path: String

  /// The path of a child object.
  public func childPath(_ name: String) -> String { path == "/" ? "/" + name : path + "/" + name }

  /// A subgroup, or nil when absent.
  public func group(_ name: String) -> HDF5Group? { file.group(childPath(name)) }

  /// Whether the group has this attribute.
  public func hasAttribute(_ name: String) -> Bool {
    HDF5Lock.run { H5Aexists_by_name(file.id, path, name, HDF5Lock.linkAccess) > 0 }
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
      guard chunks.count <= HDF5Limits.maximumAttributeStrings else {
        throw unreadable(name, "more than \(HDF5Limits.maximumAttributeStrings) strings")
      }
      index += 1
    }
    return index > 0 ? chunks : nil
  }

  /// Whether a dataset exists at a path relative to this group.
  public func hasDataset(_ relativePath: String) -> Bool {
    HDF5Lock.run {
      let absolute = childPath(relativePath)
      guard file.linkExists(absolute) else { return false }
      return chdf5_object_type(file.id, absolute, HDF5Lock.linkAccess) == Int32(H5O_TYPE_DATASET.rawValue)
    }
  }

  /// The first external (or user-defined) link on the way to a child, as an absolute path, or nil.
  public func foreignLink(_ relativePath: String) -> String? { file.foreignLink(in: childPath(relativePath)) }

  /// Reads a numeric dataset as float32, with its shape.
  public func floatDataset(_ relativePath: String) throws -> (shape: [Int], values: [Float]) {
    guard case .values(let shape, let values) = try floatDataset(relativePath, locatingContiguous: false) else {
      preconditionFailure("a dataset read without locating has values")
    }
    return (shape, values)
  }

  /// A numeric dataset as float32 values, or, with `locatingContiguous`, where its values lie in the file
  /// when they are one plain little-endian float32 run there (Keras' usual layout): the caller then reads
  /// those bytes itself, once, instead of libhdf5 copying them.
  public func floatDataset(_ relativePath: String, locatingContiguous: Bool) throws -> HDF5FloatDataset {
    try HDF5Lock.run {
      let absolute = childPath(relativePath)
      guard hasDataset(relativePath) else { throw HDF5Error.missing(path: file.path, object: absolute) }
      let dataset = H5Dopen2(file.id, absolute, HDF5Lock.datasetAccess)
      guard dataset >= 0 else { throw HDF5Error.missing(path: file.path, object: absolute) }
      defer { H5Dclose(dataset) }
      let type = H5Dget_type(dataset)
      guard type >= 0 else {
        throw HDF5Error.unreadable(path: file.path, object: absolute, detail: "unreadable datatype")
      }
      defer { H5Tclose(type) }
      let typeClass = H5Tget_class(type)
      guard typeClass == H5T_FLOAT || typeClass == H5T_INTEGER else {
        throw HDF5Error.unreadable(path: file.path, object: absolute, detail: "not a numeric dataset")
      }
      let space = H5Dget_space(dataset)
      guard space >= 0 else {
        throw HDF5Error.unreadable(path: file.path, object: absolute, detail: "unreadable dataspace")
      }
      defer { H5Sclose(space) }
      let rank = Int(H5Sget_simple_extent_ndims(space))
      guard (0...HDF5Limits.maximumRank).contains(rank) else {
        throw HDF5Error.unreadable(path: file.path, object: absolute, detail: "invalid rank \(rank)")
      }
      var dims = [hsize_t](repeating: 0, count: max(rank, 1))
      guard H5Sget_simple_extent_dims(space, &dims, nil) >= 0 else {
        throw HDF5Error.unreadable(path: file.path, object: absolute, detail: "unreadable dimensions")
      }
      let shape = rank == 0 ? [] : dims.prefix(rank).map { Int(clamping: $0) }
      var count = 1
      for dimension in shape {
        let (product, overflow) = count.multipliedReportingOverflow(by: dimension)
        guard !overflow, product <= HDF5Limits.maximumDatasetElements else {
          throw HDF5Error.unreadable(
            path: file.path, object: absolute,
            detail: "shape \(shape) has more than \(HDF5Limits.maximumDatasetElements) elements (the reader's limit)")
        }
        count = product
      }
      try checkStorage(dataset, type, absolute, elements: count)
      if locatingContiguous, count > 0 {
        let offset = chdf5_contiguous_float32_offset(dataset, type)
        if offset >= 0 { return .located(shape: shape, offset: Int(offset)) }
      }
      var values: [Float]
      let status: herr_t
      if typeClass == H5T_FLOAT && H5Tget_size(type) > 4 {
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
      return .values(shape: shape, values: values)
    }
  }

  /// The names of the direct children (groups and datasets), in creation or name order.
  public func childNames() -> [String] {
    HDF5Lock.run {
      var names: [String] = []
      var index: hsize_t = 0
      while names.count < HDF5Limits.maximumAttributeStrings {
        let length = H5Lget_name_by_idx(file.id, path, H5_INDEX_NAME, H5_ITER_INC, index, nil, 0, HDF5Lock.linkAccess)
        guard length >= 0, length < 1 << 16 else { break }
        var buffer = [CChar](repeating: 0, count: Int(length) + 1)
        guard
          H5Lget_name_by_idx(
            file.id, path, H5_INDEX_NAME, H5_ITER_INC, index, &buffer, Int(length) + 1, HDF5Lock.linkAccess) >= 0
        else { break }
        names.append(String(cString: buffer))
        index += 1
      }
      return names
    }
  }

  private func unreadable(_ name: String, _ detail: String) -> HDF5Error {
    .unreadable(path: file.path, object: childPath(name), detail: detail)
  }

  /// Reads every string of a string attribute; branches on variable- versus fixed-length storage.
  private func readStrings(attribute name: String) throws -> [String] {
    try HDF5Lock.run {
      let attribute = H5Aopen_by_name(file.id, path, name, chdf5_p_default(), HDF5Lock.linkAccess)
      guard attribute >= 0 else { throw HDF5Error.missing(path: file.path, object: childPath(name)) }
      defer { H5Aclose(attribute) }
      let type = H5Aget_type(attribute)
      guard type >= 0 else { throw unreadable(name, "unreadable datatype") }
      defer { H5Tclose(type) }
      let space = H5Aget_space(attribute)
      guard space >= 0 else { throw unreadable(name, "unreadable dataspace") }
      defer { H5Sclose(space) }
      let points = H5Sget_simple_extent_npoints(space)
      // An empty list is stored without a string type (h5py writes `weight_names` of a layer without
      // weights as an empty float64 array).
      if H5Tget_class(type) != H5T_STRING && points == 0 { return [] }
      guard H5Tget_class(type) == H5T_STRING else { throw unreadable(name, "not a string attribute") }
      guard points >= 0, points <= HDF5Limits.maximumAttributeStrings else {
        throw unreadable(name, "claims \(points) strings (limit \(HDF5Limits.maximumAttributeStrings))")
      }
      let count = Int(max(points, 1))

      if H5Tis_variable_str(type) > 0 {
        let memoryType = H5Tcopy(chdf5_c_s1())
        defer { H5Tclose(memoryType) }
        H5Tset_size(memoryType, chdf5_variable())
        H5Tset_cset(memoryType, H5Tget_cset(type))
        var pointers = [UnsafeMutablePointer<CChar>?](repeating: nil, count: count)
        // libhdf5 allocates each string at the length the file declares before reading it: a corrupt
        // length fails here once it is past the reader's address-space allowance.
        guard H5Aread(attribute, memoryType, &pointers) >= 0 else {
          throw unreadable(
            name,
            "libhdf5 could not read its variable-length strings (a corrupt length, or more memory than the reader may use)"
          )
        }
        defer { for pointer in pointers { H5free_memory(pointer) } }
        return pointers.map { $0.map { String(cString: $0) } ?? "" }
      }

      let size = H5Tget_size(type)
      let (total, overflow) = size.multipliedReportingOverflow(by: count)
      guard size > 0, !overflow, total <= HDF5Limits.maximumAttributeBytes else {
        throw unreadable(
          name, "claims \(count) strings of \(size) bytes (limit \(HDF5Limits.maximumAttributeBytes) bytes)")
      }
      let memoryType = H5Tcopy(type)
      defer { H5Tclose(memoryType) }
      var bytes = [UInt8](repeating: 0, count: total)
      guard H5Aread(attribute, memoryType, &bytes) >= 0 else { throw unreadable(name, "read failed") }
      return (0..<count).map { index in
        let slice = bytes[(index * size)..<((index + 1) * size)]
        let trimmed = slice.prefix { $0 != 0 }
        return String(decoding: trimmed, as: UTF8.self)
      }
    }
  }
}

extension HDF5Group {
  /// How many times larger than its stored bytes a compressed (filtered) dataset may be once read:
  /// deflate cannot exceed about 1032:1.
  public static let maxCompressionRatio = 1100

  /// Fails when the dataset declares more data than it stores in the file (times `maxCompressionRatio`
  /// when compressed), so a small file cannot make the reader allocate gigabytes. Call under the lock.
  func checkStorage(_ dataset: hid_t, _ type: hid_t, _ absolute: String, elements: Int) throws {
    guard elements > 0 else { return }
    let elementSize = max(Int(H5Tget_size(type)), 1)
    let (needed, overflow) = elements.multipliedReportingOverflow(by: elementSize)
    let stored = Int(exactly: H5Dget_storage_size(dataset)) ?? Int.max
    let plist = H5Dget_create_plist(dataset)
    let filters = plist >= 0 ? Int(H5Pget_nfilters(plist)) : 0
    if plist >= 0 { H5Pclose(plist) }
    // stat, not FileManager's attributes: those look up the owner's name (reading /etc/passwd and
    // /etc/group) for every dataset.
    var info = stat()
    let fileSize = stat(file.path, &info) == 0 ? Int(info.st_size) : Int.max
    let available = min(stored, fileSize)
    let (allowed, allowedOverflow) = available.multipliedReportingOverflow(
      by: filters > 0 ? Self.maxCompressionRatio : 1)
    guard !overflow, allowedOverflow || needed <= allowed else {
      throw HDF5Error.unreadable(
        path: file.path, object: absolute,
        detail: "declares \(elements) elements (\(needed) bytes) but the file stores only \(available) bytes for it")
    }
  }
}
