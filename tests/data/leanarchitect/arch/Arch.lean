import Arch.Basic
import Arch.Main
