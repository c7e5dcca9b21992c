/// Per-edge amounts for 2-D padding or cropping.
public struct Box2D: Sendable, Equatable {
  public var top: Int
  public var bottom: Int
  public var left: Int
  public var right: Int

  public init(top: Int, bottom: Int, left: Int, right: Int) {
    self.top = top
    self.bottom = bottom
    self.left = left
    self.right = right
  }
}
