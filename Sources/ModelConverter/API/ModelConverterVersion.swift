/// The version of this converter, recorded in every model it writes.
public enum ModelConverterVersion {
  public static let current = "0.1.0"
}
