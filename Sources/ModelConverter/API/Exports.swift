// What a caller of `import ModelConverter` needs from the modules underneath, without importing them.

@_exported import enum CoreMLFormat.AtomicFile
@_exported import enum CoreMLFormat.CoreMLReaderError
@_exported import enum CoreMLFormat.CoreMLWriterError
@_exported import struct CoreMLFormat.EncodedModel
@_exported import struct CoreMLFormat.WeightCompression
@_exported import enum ImageFormat.CropAndScale
@_exported import enum ImageFormat.ImageFile
@_exported import enum ImageFormat.ImageFileError
@_exported import struct ImageFormat.RGBImage
@_exported import struct KerasFormat.KerasCustomLayers
@_exported import enum KerasFormat.KerasReaderError
@_exported import enum ModelIR.ClassLabels
@_exported import struct ModelIR.DeploymentTarget
@_exported import enum ModelIR.GraphError
@_exported import enum ModelIR.ImageColorSpace
@_exported import struct ModelIR.ImagePreprocessing
@_exported import enum ModelIR.ModelFormat
@_exported import struct ModelIR.SpecificationViolation
@_exported import enum ModelIR.WeightPrecision
@_exported import enum ONNXFormat.ONNXFormatError
@_exported import enum ONNXFormat.ONNXImportError
@_exported import struct ReferenceRuntime.Detection
@_exported import struct ReferenceRuntime.DetectionAgreement
@_exported import struct ReferenceRuntime.NonMaximumSuppression
