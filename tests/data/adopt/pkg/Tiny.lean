import Tiny.Basic
import Tiny.More
