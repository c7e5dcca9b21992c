// What a caller of `import ModelConverter` needs from the modules underneath, without importing them.

@_exported import enum CoreMLFormat.ClassLabels
@_exported import struct CoreMLFormat.ImagePreprocessing
@_exported import enum CoreMLFormat.ImageColorSpace
@_exported import enum CoreMLFormat.WeightPrecision
@_exported import enum CoreMLFormat.ModelFormat
@_exported import struct CoreMLFormat.DeploymentTarget
@_exported import struct CoreMLFormat.EncodedModel
@_exported import enum CoreMLFormat.CoreMLWriterError
@_exported import enum CoreMLFormat.CoreMLReaderError
@_exported import enum KerasFormat.KerasReaderError
@_exported import enum ONNXFormat.ONNXFormatError
@_exported import enum ONNXFormat.ONNXImportError
@_exported import struct KerasFormat.KerasCustomLayers
@_exported import enum ModelIR.GraphError
@_exported import struct ImageFormat.RGBImage
@_exported import enum ImageFormat.ImageFile
@_exported import enum ImageFormat.ImageFileError
@_exported import enum ImageFormat.CropAndScale
