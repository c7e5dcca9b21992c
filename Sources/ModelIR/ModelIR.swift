/// The typed graph that every reader produces and every writer and runtime consumes.
///
/// Layout decision: the IR keeps **Keras semantics and layout**. Tensor shapes exclude the batch
/// dimension and are channels-last (`[H, W, C]` for images, `[D]` for vectors), and weights keep
/// Keras' layouts (convolution kernels `[kh, kw, in/groups, out]`, dense kernels `[in, out]`).
/// The only place where data is transposed into Core ML's channel-first layouts is the Core ML
/// boundary (`CoreMLFormat`), where the writer rearranges weights and maps axes, and the reader
/// rearranges them back. Nothing between a reader and a writer ever transposes.
public enum ModelIRDocumentation {}
