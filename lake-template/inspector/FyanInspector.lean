import Lean

/-!
# fyan-inspector: the completion gate's trusted inspector

A small program of Fyan's own, compiled for a project's toolchain pin *before* any candidate
exists (`fyan/lean/inspector.py` builds it in a scratch Lake package and keeps the executable
where no agent can write). At gate time it reads the compiled modules of a unit the way
lean4checker and comparator read them: `importModules` loads the `.olean` files as an
environment, with environment extensions left at their initial state (`loadExts` unset) and
without `enableInitializersExecution`, so no source is elaborated after the untrusted import
and no initializer (`initialize`, `[init]`) of the candidate runs. Nothing of the candidate is
evaluated: the program only reads declarations and extension entries.

Usage (run through `lake env` in the unit's Lake workspace, which sets `LEAN_PATH` and
`LEAN_SYSROOT`):

    fyan-inspector --out FILE [--module M]... [--name N]... [--import M]...
                   [--black-box N]... [--search-path DIR]... [--local-prefix P]

It writes one JSON object to FILE (format `fyan-inspector/1`, schema in
`fyan/lean/inspector.py`):

* `modules`: for each `--module`, its imports, its extension entries (extension name and entry
  count: every attribute, syntax, elaborator, instance, ... the module registers), and for
  **every** declaration of the module: kind, module, level parameters, the full structure of
  its elaborated type (derived `Repr` of `Expr`, metadata removed; Fyan hashes it) and a short
  printed form, the value's structure for definitions, safety (`safe`/`unsafe`/`partial`),
  `implemented_by`, `extern`, `init`, whether `sorryAx` occurs in it directly (and in its type),
  whether its type concludes in `True`, and its transitive axioms (as `Lean.collectAxioms` follows constants);
* `lookups`: for each `--name` (looked up in the environment of the modules and `--import`s):
  `found`, the same fields, the constants its statement uses directly (with their modules, kinds,
  whether each is a structure projection, and the constants in the conclusion of their own
  types, after the binders), the
  constants of modules under `--local-prefix` its meaning depends on transitively (with their
  meaning), and the domains of its leading `∀` binders;
* `problems`: modules that could not be found.

`--black-box N`: the axioms of `N` are reported for `N` itself but not passed on to the
declarations that use `N` (SA-Pass judges a checker without the candidate's own proof).
`--search-path DIR`: extra folders searched for `.olean` files before `LEAN_PATH`.

The transitive axioms of all reported declarations are computed in one pass over the
constants they reach: a bit set of axioms per constant, propagated along the references until
nothing changes (cycles through inductive types included).
-/

open Lean

namespace FyanInspector

/-- The command line of one run (see the module documentation). -/
structure Args where
  modules : Array Name := #[]
  names : Array Name := #[]
  imports : Array Name := #[]
  blackBox : Array Name := #[]
  searchPath : Array System.FilePath := #[]
  localPrefix : Name := .anonymous
  out : Option System.FilePath := none

/-- A declaration name written on the command line: components separated by `.`, a component
written in `«»` taken verbatim. -/
def parseName (s : String) : Name := Id.run do
  let mut parts : Array String := #[]
  let mut cur : String := ""
  let mut quoted := false
  for c in s.toList do
    if quoted then
      if c == '»' then
        quoted := false
      else
        cur := cur.push c
    else if c == '«' then
      quoted := true
    else if c == '.' then
      parts := parts.push cur
      cur := ""
    else
      cur := cur.push c
  parts := parts.push cur
  return parts.foldl (fun n p => Name.mkStr n p) Name.anonymous

def parseArgs (a : Args) : List String → Except String Args
  | [] => .ok a
  | "--module" :: v :: rest => parseArgs { a with modules := a.modules.push (parseName v) } rest
  | "--name" :: v :: rest => parseArgs { a with names := a.names.push (parseName v) } rest
  | "--import" :: v :: rest => parseArgs { a with imports := a.imports.push (parseName v) } rest
  | "--black-box" :: v :: rest => parseArgs { a with blackBox := a.blackBox.push (parseName v) } rest
  | "--search-path" :: v :: rest => parseArgs { a with searchPath := a.searchPath.push ⟨v⟩ } rest
  | "--local-prefix" :: v :: rest => parseArgs { a with localPrefix := parseName v } rest
  | "--out" :: v :: rest => parseArgs { a with out := some ⟨v⟩ } rest
  | arg :: _ => .error s!"unknown or incomplete argument '{arg}'"

/-- The kind of a constant, as Fyan names it. -/
def kindName : ConstantInfo → String
  | .axiomInfo _ => "axiom"
  | .defnInfo _ => "def"
  | .thmInfo _ => "theorem"
  | .opaqueInfo _ => "opaque"
  | .quotInfo _ => "quot"
  | .inductInfo _ => "inductive"
  | .ctorInfo _ => "constructor"
  | .recInfo _ => "recursor"

/-- `safe`, `unsafe` or `partial`. -/
def safetyName : ConstantInfo → String
  | .defnInfo v =>
    match v.safety with
    | .«unsafe» => "unsafe"
    | .«partial» => "partial"
    | .safe => "safe"
  | ci => if ci.isUnsafe then "unsafe" else "safe"

/-- `e` without metadata nodes (`Expr.mdata d e` is definitionally `e`; metadata may carry
source positions, which must not make two equal statements differ). -/
partial def stripMData : Expr → Expr
  | .mdata _ e => stripMData e
  | .app f a => .app (stripMData f) (stripMData a)
  | .lam n t b bi => .lam n (stripMData t) (stripMData b) bi
  | .forallE n t b bi => .forallE n (stripMData t) (stripMData b) bi
  | .letE n t v b nd => .letE n (stripMData t) (stripMData v) (stripMData b) nd
  | .proj s i e => .proj s i (stripMData e)
  | e => e

/-- The full structure of an expression as text (derived `Repr` of `Expr`, metadata removed):
what Fyan hashes to compare elaborated statements. -/
def exprRepr (e : Expr) : String :=
  (repr (stripMData e)).pretty 1000000

def truncate (s : String) (n : Nat) : String :=
  if s.length ≤ n then s else (s.take n) ++ "…"

/-- The constants a constant refers to, followed as Lean's `collectAxioms` follows them. -/
def refs : ConstantInfo → Array Name
  | .axiomInfo v => v.type.getUsedConstants
  | .defnInfo v => v.type.getUsedConstants ++ v.value.getUsedConstants
  | .thmInfo v => v.type.getUsedConstants ++ v.value.getUsedConstants
  | .opaqueInfo v => v.type.getUsedConstants ++ v.value.getUsedConstants
  | .quotInfo v => v.type.getUsedConstants
  | .inductInfo v => v.type.getUsedConstants ++ v.ctors.toArray
  | .ctorInfo v => v.type.getUsedConstants
  | .recInfo v => v.type.getUsedConstants

/-- What a constant means: its type, and the value of a definition. -/
def meaningOf : ConstantInfo → Array Expr
  | .defnInfo v => #[v.type, v.value]
  | ci => #[ci.type]

/-- The module that declares `c`. -/
def moduleOf (env : Environment) (c : Name) : Option Name := do
  let idx ← env.getModuleIdxFor? c
  env.header.moduleNames[idx.toNat]?

def moduleText (env : Environment) (c : Name) : String :=
  ((moduleOf env c).map Name.toString).getD ""

/-- Transitive axioms of each constant reachable from `interest` (see the module
documentation). A constant of `blackBox` keeps its own axioms but passes none on. -/
def transitiveAxioms (env : Environment) (interest : Array Name) (blackBox : NameSet) :
    Std.HashMap Name (Array Name) := Id.run do
  -- depth-first, recording each constant's references and a post-order
  let mut seen : NameSet := {}
  let mut refsOf : Std.HashMap Name (Array Name) := {}
  let mut post : Array Name := #[]
  let mut axiomNames : Array Name := #[]
  let mut axiomIdx : Std.HashMap Name Nat := {}
  let mut stack : Array (Name × Bool) := interest.map fun n => (n, false)
  while 0 < stack.size do
    let (c, expanded) := stack[stack.size - 1]!
    stack := stack.pop
    if expanded then
      post := post.push c
      continue
    if seen.contains c then
      continue
    seen := seen.insert c
    match env.find? c with
    | none => post := post.push c
    | some ci =>
      if let .axiomInfo _ := ci then
        axiomIdx := axiomIdx.insert c axiomNames.size
        axiomNames := axiomNames.push c
      let rs := refs ci
      refsOf := refsOf.insert c rs
      stack := stack.push (c, true)
      for r in rs do
        unless seen.contains r do
          stack := stack.push (r, false)
  -- a bit set of axioms per constant, propagated until nothing changes
  let mut masks : Std.HashMap Name Nat := {}
  let mut changed := true
  while changed do
    changed := false
    for c in post do
      let mut m : Nat := match axiomIdx.get? c with
        | some i => 2 ^ i
        | none => 0
      for r in refsOf.getD c #[] do
        if blackBox.contains r then
          continue
        m := m ||| masks.getD r 0
      if m != masks.getD c 0 then
        masks := masks.insert c m
        changed := true
  let mut result : Std.HashMap Name (Array Name) := {}
  for c in post do
    let m := masks.getD c 0
    if m != 0 then
      let mut found : Array Name := #[]
      for i in [0:axiomNames.size] do
        if m.testBit i then
          found := found.push axiomNames[i]!
      result := result.insert c found
  return result

/-- The constants declared in modules under `pfx` that the meaning of `start` depends on,
transitively through the meaning of such constants (and the constructors of such inductive
types). A theorem's proof does not change what is stated, so it is not followed. -/
def localClosure (env : Environment) (pfx : Name) (start : Array Name) : Array (Name × Name × ConstantInfo) := Id.run do
  let mut seen : NameSet := {}
  let mut out : Array (Name × Name × ConstantInfo) := #[]
  let mut todo : Array Name := start
  while 0 < todo.size do
    let c := todo[todo.size - 1]!
    todo := todo.pop
    if seen.contains c then
      continue
    seen := seen.insert c
    let some ci := env.find? c | continue
    let some m := moduleOf env c | continue
    if pfx.isAnonymous || !pfx.isPrefixOf m then
      continue
    out := out.push (c, m, ci)
    for e in meaningOf ci do
      todo := todo ++ e.getUsedConstants
    if let .inductInfo v := ci then
      todo := todo ++ v.ctors.toArray
  return out

/-- The domains of the leading `∀` binders of a type (at most 64). -/
partial def binderDomains (e : Expr) (acc : Array String := #[]) : Array String :=
  if acc.size ≥ 64 then acc else
  match e with
  | .forallE _ t b _ => binderDomains b (acc.push (exprRepr t))
  | .mdata _ b => binderDomains b acc
  | _ => acc

def valueRepr (env : Environment) : ConstantInfo → Json
  | .defnInfo v => toJson (exprRepr v.value)
  | .inductInfo v => toJson (v.ctors.toArray.map fun c => ((env.find? c).map fun cc => exprRepr cc.type).getD "")
  | _ => Json.null

def nameJson (n : Option Name) : Json :=
  match n with
  | some m => toJson m.toString
  | none => Json.null

/-- The record of one declaration (fields in the module documentation). -/
def declFields (env : Environment) (axioms : Std.HashMap Name (Array Name)) (ci : ConstantInfo) :
    List (String × Json) :=
  let n := ci.name
  [("name", toJson n.toString),
   ("found", toJson true),
   ("kind", toJson (kindName ci)),
   ("module", toJson (moduleText env n)),
   ("level_params", toJson (ci.levelParams.map Name.toString)),
   ("type_repr", toJson (exprRepr ci.type)),
   ("type_pp", toJson (truncate (toString ci.type) 2000)),
   ("value_repr", valueRepr env ci),
   ("safety", toJson (safetyName ci)),
   ("implemented_by", nameJson (Compiler.getImplementedBy? env n)),
   ("extern", toJson (isExtern env n)),
   ("init", toJson (hasInitAttr env n)),
   ("sorry_direct", toJson ((refs ci).contains ``sorryAx)),
   ("sorry_in_type", toJson (ci.type.getUsedConstants.contains ``sorryAx)),
   ("conclusion_true", toJson (ci.type.getForallBody.isConstOf ``True)),
   ("axioms", toJson ((axioms.getD n #[]).map Name.toString))]

def lookupJson (env : Environment) (axioms : Std.HashMap Name (Array Name)) (pfx : Name) (n : Name) : Json :=
  match env.find? n with
  | none => Json.mkObj [("name", toJson n.toString), ("found", toJson false)]
  | some ci => Id.run do
    let mut seen : NameSet := {}
    let mut direct : Array Json := #[]
    for e in meaningOf ci do
      for c in e.getUsedConstants do
        unless seen.contains c do
          seen := seen.insert c
          let info := env.find? c
          let kind : String := match info with
            | some cci => kindName cci
            | none => ""
          let conclusion : Array String := match info with
            | some cci => cci.type.getForallBody.getUsedConstants.map Name.toString
            | none => #[]
          direct := direct.push (Json.mkObj [
            ("name", toJson c.toString),
            ("module", toJson (moduleText env c)),
            ("kind", toJson kind),
            ("projection", toJson (env.isProjectionFn c)),
            ("conclusion", toJson conclusion)])
    let start := (meaningOf ci).foldl (fun acc e => acc ++ e.getUsedConstants) #[]
    let locals := (localClosure env pfx start).map fun (c, m, cci) => Json.mkObj [
      ("name", toJson c.toString),
      ("module", toJson m.toString),
      ("kind", toJson (kindName cci)),
      ("meaning", toJson ((meaningOf cci).map exprRepr))]
    return Json.mkObj (declFields env axioms ci ++ [
      ("constants", Json.arr direct),
      ("local_constants", Json.arr locals),
      ("binder_domains", toJson (binderDomains ci.type))])

def moduleJson (env : Environment) (axioms : Std.HashMap Name (Array Name)) (m : Name) : Json :=
  match env.header.moduleNames.findIdx? (· == m) with
  | none => Json.mkObj [("name", toJson m.toString), ("found", toJson false)]
  | some i =>
    let data := env.header.moduleData[i]!
    let decls := data.constants.map fun ci => Json.mkObj (declFields env axioms ci)
    let exts := data.entries.filterMap fun (ext, es) =>
      if es.isEmpty then none
      else some (Json.mkObj [("name", toJson ext.toString), ("entries", toJson es.size)])
    Json.mkObj [
      ("name", toJson m.toString),
      ("found", toJson true),
      ("imports", toJson (data.imports.map fun imp => imp.module.toString)),
      ("declarations", Json.arr decls),
      ("extensions", Json.arr exts),
      ("extra_constants", toJson (data.extraConstNames.map Name.toString))]

def run (a : Args) : IO Json := do
  initSearchPath (← findSysroot) a.searchPath.toList
  let targets := a.modules ++ a.imports
  let env ← importModules (targets.map fun m => ({ module := m } : Import)) {}
  let mut interest : Array Name := #[]
  let mut problems : Array String := #[]
  for m in a.modules do
    match env.header.moduleNames.findIdx? (· == m) with
    | some i => interest := interest ++ env.header.moduleData[i]!.constNames
    | none => problems := problems.push s!"module {m} is not in the environment"
  for n in a.names do
    if env.contains n then
      interest := interest.push n
  let black := a.blackBox.foldl (fun s n => s.insert n) ({} : NameSet)
  let axioms := transitiveAxioms env interest black
  return Json.mkObj [
    ("format", toJson "fyan-inspector/1"),
    ("lean_version", toJson Lean.versionString),
    ("modules", Json.arr (a.modules.map (moduleJson env axioms))),
    ("lookups", Json.arr (a.names.map (lookupJson env axioms a.localPrefix))),
    ("problems", toJson problems)]

end FyanInspector

def main (args : List String) : IO UInt32 := do
  match FyanInspector.parseArgs {} args with
  | .error e =>
    IO.eprintln s!"fyan-inspector: {e}"
    return 2
  | .ok a =>
    match a.out with
    | none =>
      IO.eprintln "fyan-inspector: --out FILE is required"
      return 2
    | some out =>
      let mut report : Json := Json.null
      try
        report ← FyanInspector.run a
      catch e =>
        report := Json.mkObj [
          ("format", toJson "fyan-inspector/1"),
          ("lean_version", toJson Lean.versionString),
          ("error", toJson (toString e))]
      IO.FS.writeFile out (report.compress ++ "\n")
      return 0
