// The model interface types (image preprocessing, labels, declared arrays, formats) live in ModelIR, the
// neutral layer every frontend, writer and the verifier share; whoever imports Core ML sees them too.
@_exported import ModelIR
