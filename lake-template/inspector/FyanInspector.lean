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

It imports at `OLeanLevel.private`: "If it is `private`, all data is loaded as if no `module`
annotations were present in the imports" (src/Lean/Environment.lean, `importModules`), so a
module of Lean's module system shows every proof body and private declaration, as any other
(`docs/lean-contract.md`, row "import level").

Every API this file uses is listed in `docs/lean-contract.md` with the Lean source that shows it
for v4.24 through the newest sources read; nothing here depends on an API that changed meaning
in that range (no `String.take`: it returns `String.Slice` in newer Lean).

Usage (run through `lake env`, which sets `LEAN_PATH` and `LEAN_SYSROOT`):

    fyan-inspector --out FILE --nonce HEX [--module M]... [--name N]... [--import M]...
                   [--black-box N]... [--search-path DIR]... [--local-prefix P] [--follow-references]
                   [--declarations FILE]

It writes one JSON object to FILE (format `fyan-inspector/3`; the schema, every field required,
is `fyan/lean/inspector.py`), echoing `--nonce`:

* `modules`: for each `--module`: `is_module` (a file of Lean's module system), its imports, its
  extension entries (extension name and entry count), its `registrations` (every instance and
  unification hint it registers, and every `@[reducible]` declaration, with the constants they
  are about and their modules, the keys Lean stored for an instance or hint, and the
  `outParam` positions of an instance's class), and for **every** declaration of the module: kind, module, level
  parameters, the full structure of its elaborated type (derived `Repr` of `Expr`, metadata
  removed; Fyan hashes it) and a short printed form, the value's structure for definitions,
  safety, `implemented_by`, `extern`, `init` (`[init]`, `initialize`, `builtin_initialize`),
  whether `sorryAx` occurs in it directly (and in its type), whether its type concludes in
  `True`, and, transitively (as `Lean.collectAxioms` follows constants): its `axioms`, the
  `kernel_evaluated` constants it reaches (`Lean.reduceBool`, `Lean.reduceNat`: opaques the
  kernel evaluates with compiled code, src/kernel/type_checker.cpp `reduce_native`), and the
  `missing_constants` it refers to that are not in the environment;
* `lookups`: for each `--name`: `{name, found: false}` when absent, else the same fields plus the
  constants its statement uses directly (with their modules, kinds, whether each is a structure
  projection, and the constants in the conclusion of their own types), the constants of modules
  under `--local-prefix` its meaning depends on transitively (with their meaning), the
  domains of its leading `∀` binders, and — with `--follow-references`, else empty — its
  `references`: every declaration of the `--import` modules it reaches through types and values
  (statement and proof, as `collectAxioms` follows constants), itself first, each with the
  declarations of those modules it refers to directly (what drift follows through helpers no
  blueprint node names);
* `problems`: modules that are not in the environment;
* `blueprint`: LeanArchitect's `@[blueprint]` entries, read from every module of the environment
  by the extension's name (`blueprintJson`): `{present: false}` without LeanArchitect, else each
  entry's declaration, module, label, `uses` labels of statement and proof, and `notReady`.

A module that cannot be loaded, an unknown argument, anything thrown: `error` (exit 0, the
report says why); Fyan fails closed on it.

`--black-box N`: the axioms of `N` are reported for `N` itself but not passed on to the
declarations that use `N` (SA-Pass judges a checker without the candidate's own proof).
`--search-path DIR`: extra folders searched for `.olean` files before `LEAN_PATH`.
`--declarations FILE`: also write every non-internal constant of the environment (the `--import`
modules and what they import) to FILE, one JSON line each (`declarationLines`): the list the
declaration search's index is built from, once per toolchain and dependency set.
-/

open Lean

namespace FyanInspector

def format : String := "fyan-inspector/3"

/-- The constants the kernel evaluates with compiled code (src/kernel/type_checker.cpp,
`reduce_native`, Lean ≤ 4.34): reaching one is refused like `Lean.ofReduceBool`. -/
def kernelEvaluated : Array Name := #[`Lean.reduceBool, `Lean.reduceNat]

/-- The command line of one run (see the module documentation). -/
structure Args where
  modules : Array Name := #[]
  names : Array Name := #[]
  imports : Array Name := #[]
  blackBox : Array Name := #[]
  searchPath : Array System.FilePath := #[]
  localPrefix : Name := .anonymous
  followReferences : Bool := false
  out : Option System.FilePath := none
  nonce : String := ""
  declarations : Option System.FilePath := none

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
  | "--follow-references" :: rest => parseArgs { a with followReferences := true } rest
  | "--out" :: v :: rest => parseArgs { a with out := some ⟨v⟩ } rest
  | "--nonce" :: v :: rest => parseArgs { a with nonce := v } rest
  | "--declarations" :: v :: rest => parseArgs { a with declarations := some ⟨v⟩ } rest
  | arg :: _ => .error s!"unknown or incomplete argument '{arg}'"

/-- The kind of a constant, as Fyan names it. The match is exhaustive: a constructor added to
`ConstantInfo` in a future Lean makes this file fail to compile (fail closed). -/
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

/-- The first `n` characters of `s` (and `…` when cut). Built with `String.push` only:
`String.take` returns a `String.Slice` in newer Lean (src/Init/Data/String/TakeDrop.lean). -/
def truncate (s : String) (n : Nat) : String := Id.run do
  if s.length ≤ n then
    return s
  let mut out := ""
  let mut i := 0
  for c in s.toList do
    if i ≥ n then
      break
    out := out.push c
    i := i + 1
  return out.push '…'

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

/-- The environment with its module names read once (`EnvironmentHeader.moduleNames` is
rebuilt from `header.modules` on every call in newer Lean, src/Lean/Environment.lean). -/
structure Ctx where
  env : Environment
  moduleNames : Array Name
  moduleIdx : Std.HashMap Name Nat

def Ctx.mk' (env : Environment) : Ctx := Id.run do
  let names := env.header.moduleNames
  let mut idx : Std.HashMap Name Nat := {}
  for i in [0:names.size] do
    idx := idx.insert names[i]! i
  return { env, moduleNames := names, moduleIdx := idx }

/-- The module that declares `c`. -/
def Ctx.moduleOf (ctx : Ctx) (c : Name) : Option Name := do
  let idx ← ctx.env.getModuleIdxFor? c
  ctx.moduleNames[idx.toNat]?

def Ctx.moduleText (ctx : Ctx) (c : Name) : String :=
  ((ctx.moduleOf c).map Name.toString).getD ""

/-- What each constant reaches transitively: its axioms, the kernel-evaluated constants and the
constants missing from the environment. -/
structure Reach where
  axioms : Array Name := #[]
  kernel : Array Name := #[]
  missing : Array Name := #[]

/-- Transitive marks of each constant reachable from `interest`: every axiom, every
kernel-evaluated constant and every constant not in the environment is a mark; a bit set of
marks per constant is propagated along the references until nothing changes (cycles through
inductive types included). A constant of `blackBox` keeps its own marks but passes none on. -/
def transitiveMarks (env : Environment) (interest : Array Name) (blackBox : NameSet) :
    Std.HashMap Name Reach := Id.run do
  let mut seen : NameSet := {}
  let mut refsOf : Std.HashMap Name (Array Name) := {}
  let mut post : Array Name := #[]
  let mut markNames : Array Name := #[]
  let mut markKind : Array Nat := #[]  -- 0 axiom, 1 kernel-evaluated, 2 missing
  let mut markIdx : Std.HashMap Name Nat := {}
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
    if kernelEvaluated.contains c then
      markIdx := markIdx.insert c markNames.size
      markNames := markNames.push c
      markKind := markKind.push 1
    match env.find? c with
    | none =>
      markIdx := markIdx.insert c markNames.size
      markNames := markNames.push c
      markKind := markKind.push 2
      post := post.push c
    | some ci =>
      if let .axiomInfo _ := ci then
        markIdx := markIdx.insert c markNames.size
        markNames := markNames.push c
        markKind := markKind.push 0
      let rs := refs ci
      refsOf := refsOf.insert c rs
      stack := stack.push (c, true)
      for r in rs do
        unless seen.contains r do
          stack := stack.push (r, false)
  let mut masks : Std.HashMap Name Nat := {}
  let mut changed := true
  while changed do
    changed := false
    for c in post do
      let mut m : Nat := match markIdx.get? c with
        | some i => 2 ^ i
        | none => 0
      for r in refsOf.getD c #[] do
        if blackBox.contains r then
          continue
        m := m ||| masks.getD r 0
      if m != masks.getD c 0 then
        masks := masks.insert c m
        changed := true
  let mut result : Std.HashMap Name Reach := {}
  for c in post do
    let m := masks.getD c 0
    if m != 0 then
      let mut r : Reach := {}
      for i in [0:markNames.size] do
        if m.testBit i then
          match markKind[i]! with
          | 0 => r := { r with axioms := r.axioms.push markNames[i]! }
          | 1 => r := { r with kernel := r.kernel.push markNames[i]! }
          | _ => r := { r with missing := r.missing.push markNames[i]! }
      result := result.insert c r
  return result

/-- The constants declared in modules under `pfx` that the meaning of `start` depends on,
transitively through the meaning of such constants (and the constructors of such inductive
types). A theorem's proof does not change what is stated, so it is not followed. -/
def localClosure (ctx : Ctx) (pfx : Name) (start : Array Name) : Array (Name × Name × ConstantInfo) := Id.run do
  let mut seen : NameSet := {}
  let mut out : Array (Name × Name × ConstantInfo) := #[]
  let mut todo : Array Name := start
  while 0 < todo.size do
    let c := todo[todo.size - 1]!
    todo := todo.pop
    if seen.contains c then
      continue
    seen := seen.insert c
    let some ci := ctx.env.find? c | continue
    let some m := ctx.moduleOf c | continue
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

def namesJson (ns : Array Name) : Json :=
  toJson (ns.map Name.toString)

/-- The record of one declaration (fields in the module documentation). -/
def declFields (ctx : Ctx) (reach : Std.HashMap Name Reach) (ci : ConstantInfo) :
    List (String × Json) :=
  let env := ctx.env
  let n := ci.name
  let r := reach.getD n {}
  [("name", toJson n.toString),
   ("found", toJson true),
   ("kind", toJson (kindName ci)),
   ("module", toJson (ctx.moduleText n)),
   ("level_params", toJson (ci.levelParams.map Name.toString)),
   ("type_repr", toJson (exprRepr ci.type)),
   ("type_pp", toJson (truncate (toString ci.type) 2000)),
   ("value_repr", valueRepr env ci),
   ("safety", toJson (safetyName ci)),
   ("implemented_by", nameJson (Compiler.getImplementedBy? env n)),
   ("extern", toJson (isExtern env n)),
   -- `hasInitAttr` is false for `initialize do …` (an `IO Unit` initializer):
   -- src/Lean/Compiler/InitAttr.lean; `isIOUnitInitFn` covers `builtin_initialize` too
   ("init", toJson (hasInitAttr env n || isIOUnitInitFn env n)),
   ("sorry_direct", toJson ((refs ci).contains ``sorryAx)),
   ("sorry_in_type", toJson (ci.type.getUsedConstants.contains ``sorryAx)),
   ("conclusion_true", toJson (ci.type.getForallBody.isConstOf ``True)),
   ("axioms", namesJson r.axioms),
   ("kernel_evaluated", namesJson r.kernel),
   ("missing_constants", namesJson r.missing)]

/-- A constant with the module that declares it (`""`: not in the environment). -/
def constJson (ctx : Ctx) (c : Name) : Json :=
  Json.mkObj [("name", toJson c.toString), ("module", toJson (ctx.moduleText c))]

/-- The declarations of the modules `home` that `n` reaches through `refs` (types and values, as
`collectAxioms` follows constants), `n` first, each with the declarations of `home` it refers to
directly (in the order `refs` gives them, without repeats); at most `limit` declarations. -/
def packageReferences (ctx : Ctx) (home : NameSet) (n : Name) (limit : Nat := 20000) : Array Json := Id.run do
  let mut seen : NameSet := ({} : NameSet).insert n
  let mut out : Array Json := #[]
  let mut todo : Array Name := #[n]
  let mut next := 0
  while next < todo.size && out.size < limit do
    let c := todo[next]!
    next := next + 1
    let some ci := ctx.env.find? c | continue
    let mut direct : Array Name := #[]
    for d in refs ci do
      let inHome := match ctx.moduleOf d with
        | some m => home.contains m
        | none => false
      if inHome && d != c && !direct.contains d then
        direct := direct.push d
        unless seen.contains d do
          seen := seen.insert d
          todo := todo.push d
    out := out.push (Json.mkObj [("name", toJson c.toString), ("references", namesJson direct)])
  return out

def lookupJson (ctx : Ctx) (reach : Std.HashMap Name Reach) (pfx : Name) (home : Option NameSet) (n : Name) : Json :=
  let env := ctx.env
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
            | none => "missing"
          let conclusion : Array String := match info with
            | some cci => cci.type.getForallBody.getUsedConstants.map Name.toString
            | none => #[]
          direct := direct.push (Json.mkObj [
            ("name", toJson c.toString),
            ("module", toJson (ctx.moduleText c)),
            ("kind", toJson kind),
            ("projection", toJson (env.isProjectionFn c)),
            ("conclusion", toJson conclusion)])
    let start := (meaningOf ci).foldl (fun acc e => acc ++ e.getUsedConstants) #[]
    let locals := (localClosure ctx pfx start).map fun (c, m, cci) => Json.mkObj [
      ("name", toJson c.toString),
      ("module", toJson m.toString),
      ("kind", toJson (kindName cci)),
      ("meaning", toJson ((meaningOf cci).map exprRepr))]
    return Json.mkObj (declFields ctx reach ci ++ [
      ("constants", Json.arr direct),
      ("local_constants", Json.arr locals),
      ("binder_domains", toJson (binderDomains ci.type)),
      ("references", Json.arr (match home with
        | some h => packageReferences ctx h n
        | none => #[]))])

/-- One key Lean stored for an instance or a unification hint in its discrimination tree
(`DiscrTree.Key`, src/Lean/Meta/DiscrTree*.lean): `kind`, the constant (`const`, `proj`: with its
module) and the number of children that follow it in pre-order (`arity`; an `arrow` has one, its
domain, on Lean 4.35.0 — Fyan reads the layout, the inspector reports what is stored). -/
def keyJson (ctx : Ctx) (kind : String) (n : Name) (arity : Nat) : Json :=
  Json.mkObj [("kind", toJson kind), ("name", toJson (if n.isAnonymous then "" else n.toString)),
    ("module", toJson (if n.isAnonymous then "" else ctx.moduleText n)), ("arity", toJson arity)]

/-- The record of one stored key (`keyJson`); an unknown kind of a newer Lean is `other`, which
names no constant, so it never makes an instance the unit's. -/
def keyOf (ctx : Ctx) (k : Meta.DiscrTree.Key) : Json :=
  match k with
  | .const n a => keyJson ctx "const" n a
  | .fvar _ a => keyJson ctx "fvar" .anonymous a
  | .proj s _ a => keyJson ctx "proj" s (a + 1)
  | .star => keyJson ctx "star" .anonymous 0
  | .arrow => keyJson ctx "arrow" .anonymous 1
  | .lit _ => keyJson ctx "lit" .anonymous 0
  | _ => keyJson ctx "other" .anonymous 0

/-- The `outParam` positions of class `cls`, as its module stored them in `classExtension`
(`ClassEntry.outParams`, src/Lean/Class.lean), read with `getModuleEntries` (extension states are
not loaded); none when the class is not an imported class. -/
def outParamsOf (ctx : Ctx) (cls : Name) : Array Nat := Id.run do
  let some idx := ctx.env.getModuleIdxFor? cls | return #[]
  for e in classExtension.getModuleEntries ctx.env idx do
    if e.name == cls then
      return e.outParams
  return #[]

/-- One registration: `kind` (`instance`, `unification_hint`, `reducible`), the declaration,
whether it is `scoped` (active where its namespace is opened), the constants it is about
(an instance: those of its type's conclusion, the class first; a hint or a reducible
declaration: those of its value), each with its module; the `keys` Lean stored for it (an
instance, a unification hint) and the `out_params` positions of an instance's class. -/
def registrationJson (ctx : Ctx) (kind : String) (decl : Name) (isScoped : Bool)
    (keys : Array Json := #[]) (outParams : Array Nat := #[]) : Json :=
  let about : Array Name := match ctx.env.find? decl with
    | some ci =>
      if kind == "instance" then ci.type.getForallBody.getUsedConstants
      else (meaningOf ci).foldl (fun acc e => acc ++ e.getUsedConstants) #[]
    | none => #[]
  Json.mkObj [
    ("kind", toJson kind),
    ("declaration", toJson decl.toString),
    ("module", toJson (ctx.moduleText decl)),
    ("scoped", toJson isScoped),
    ("about", Json.arr (about.map (constJson ctx))),
    ("keys", Json.arr keys),
    ("out_params", toJson outParams)]

/-- What module `i` registers that changes how later code elaborates: the entries it exports to
`Meta.instanceExtension` and `Meta.unificationHintExtension` (`ScopedEnvExtension.Entry`:
`global` or `scoped`, src/Lean/ScopedEnvExtension.lean), read with `getModuleEntries` (filled by
`finalizeImport` without `loadExts`), and its own `@[reducible]` declarations
(`getReducibilityStatusCore`, src/Lean/ReducibilityAttrs.lean). -/
def registrations (ctx : Ctx) (i : Nat) (data : ModuleData) : Array Json := Id.run do
  let env := ctx.env
  let mut out : Array Json := #[]
  let keysOf := fun (ks : Array Meta.DiscrTree.Key) => ks.map (keyOf ctx)
  for e in Meta.instanceExtension.ext.getModuleEntries env i do
    let (ie, isScoped) := match e with
      | ScopedEnvExtension.Entry.global ie => (ie, false)
      | ScopedEnvExtension.Entry.scoped _ ie => (ie, true)
    if let some n := ie.globalName? then
      let cls := match ie.keys[0]? with
        | some (.const c _) => c
        | _ => Name.anonymous
      out := out.push (registrationJson ctx "instance" n isScoped (keysOf ie.keys) (outParamsOf ctx cls))
  for e in Meta.unificationHintExtension.ext.getModuleEntries env i do
    let (h, isScoped) := match e with
      | ScopedEnvExtension.Entry.global h => (h, false)
      | ScopedEnvExtension.Entry.scoped _ h => (h, true)
    out := out.push (registrationJson ctx "unification_hint" h.val isScoped (keysOf h.keys))
  for n in data.constNames do
    if getReducibilityStatusCore env n matches .reducible then
      out := out.push (registrationJson ctx "reducible" n false)
  return out

def moduleJson (ctx : Ctx) (reach : Std.HashMap Name Reach) (m : Name) : Json :=
  match ctx.moduleIdx.get? m with
  | none => Json.mkObj [("name", toJson m.toString), ("found", toJson false)]
  | some i =>
    let data := ctx.env.header.moduleData[i]!
    let decls := data.constants.map fun ci => Json.mkObj (declFields ctx reach ci)
    let exts := data.entries.filterMap fun (ext, es) =>
      if es.isEmpty then none
      else some (Json.mkObj [("name", toJson ext.toString), ("entries", toJson es.size)])
    Json.mkObj [
      ("name", toJson m.toString),
      ("found", toJson true),
      ("is_module", toJson data.isModule),
      ("imports", toJson (data.imports.map fun imp => imp.module.toString)),
      ("declarations", Json.arr decls),
      ("extensions", Json.arr exts),
      ("registrations", Json.arr (registrations ctx i data)),
      ("extra_constants", toJson (data.extraConstNames.map Name.toString))]

/-! ### LeanArchitect's `@[blueprint]` entries

LeanArchitect (hanwenzhu/LeanArchitect, `Architect/Basic.lean`) keeps each `@[blueprint]` node in
`initialize blueprintExt : NameMapExtension Node ← registerNameMapExtension Node`: a
`SimplePersistentEnvExtension (Name × Node) _` (Batteries `Batteries/Lean/NameMapAttribute.lean`)
whose name is the declaration's, `Architect.blueprintExt` (`registerNameMapExtension (name := by
exact decl_name%)`). Every module's `.olean` stores the entries it added under that name in
`ModuleData.entries` (`mkModuleData`, src/Lean/Environment.lean; `exportEntriesFn := fun s =>
descr.toArrayFn s.1.reverse`, the default `toArrayFn` being `List.toArray`): an array of the pairs
`(declaration, Node)`.

The inspector does **not** find the extension in `persistentEnvExtensionsRef`: extensions are
registered only by initializers ("Environment extensions can only be registered during
initialization", `registerEnvExtension`), and this program runs none of the package's
(`enableInitializersExecution` unset), so `Architect.blueprintExt` is never registered here and
`setImportedEntries` leaves its entries where they were loaded, in `header.moduleData`. They are
read from there by the extension's name, with no `import Architect`: the program builds for every
package.

An entry is an `EnvExtensionEntry` (opaque); it is read as `Name × ArchNode` by `unsafeCast`, which
is sound only when LeanArchitect's `Node` and `NodePart` have exactly the fields, types and order
of the mirrors below (the runtime layout of a structure follows from its field types and order).
`blueprintLayoutProblem` checks that on the declarations in the environment first — the
extension's type, each constructor's parameters and field types — and any difference (another
LeanArchitect version) is reported as `layout_problem` with no entry read. The check trusts Lean's
typing of the extension: a package whose own `unsafe` code pushed entries of another type under that
name could still crash this process, which Fyan reads as no evidence (fail closed).
-/

/-- The extension's name (the `initialize` declaration's, see above). -/
def blueprintExtName : Name := `Architect.blueprintExt

/-- Mirror of LeanArchitect's `Architect.NodePart` (`Architect/Basic.lean` @ 5eb73342, line 13):
same fields, same types, same order. -/
structure ArchNodePart where
  leanOk : Bool
  text : String
  uses : Array String
  latexEnv : String

/-- Mirror of LeanArchitect's `Architect.Node` (`Architect/Basic.lean` @ 5eb73342, line 25). -/
structure ArchNode where
  name : Name
  latexLabel : String
  statement : ArchNodePart
  proof : Option ArchNodePart
  notReady : Bool
  discussion : Option Nat
  title : Option String

/-- The shape of a type built from constants and applications (`(Option String)`); `?` for
anything else, which never matches an expected shape. -/
partial def shapeOf : Expr → String
  | .const n _ => n.toString
  | .app f a => s!"({shapeOf f} {shapeOf a})"
  | .mdata _ e => shapeOf e
  | _ => "?"

/-- The shapes of the leading `∀` binder domains of `e`. -/
partial def domainShapes (e : Expr) (acc : Array String := #[]) : Array String :=
  match e with
  | .forallE _ t b _ => domainShapes b (acc.push (shapeOf t))
  | .mdata _ b => domainShapes b acc
  | _ => acc

/-- Whether inductive `ind` is a structure-like type of `env` with the single constructor
`ind.mk`, no parameters and exactly the field types `fields`: none when so, else why not. -/
def structureProblem (env : Environment) (ind : Name) (fields : Array String) : Option String :=
  let ctor := Name.mkStr ind "mk"
  match env.find? ind, env.find? ctor with
  | some (.inductInfo iv), some (.ctorInfo cv) =>
    if iv.ctors != [ctor] || iv.numParams != 0 || iv.numIndices != 0 then
      some s!"{ind} is not a structure with the constructor {ctor} and no parameters"
    else if cv.numFields != fields.size || domainShapes cv.type != fields then
      some s!"{ctor} has the fields {domainShapes cv.type}, the inspector reads {fields}"
    else
      none
  | _, _ => some s!"{ind} or {ctor} is not declared as an inductive type and its constructor"

/-- None when the environment's LeanArchitect declares `blueprintExt`, `Node` and `NodePart` as
the mirrors read them, else what differs. -/
def blueprintLayoutProblem (env : Environment) : Option String :=
  let extType := match env.find? blueprintExtName with
    | some ci => shapeOf ci.type
    | none => "?"
  if extType != "(Lean.NameMapExtension Architect.Node)" then
    some s!"{blueprintExtName} has the type {extType}, the inspector reads (Lean.NameMapExtension Architect.Node)"
  else
    match structureProblem env `Architect.NodePart #["Bool", "String", "(Array String)", "String"] with
    | some p => some p
    | none => structureProblem env `Architect.Node
        #["Lean.Name", "String", "Architect.NodePart", "(Option Architect.NodePart)", "Bool", "(Option Nat)",
          "(Option String)"]

/-- The entries of `Architect.blueprintExt` as the pairs LeanArchitect stored (see above: called
only after `blueprintLayoutProblem` found the layout the mirrors have). -/
unsafe def castBlueprintEntriesUnsafe (es : Array EnvExtensionEntry) : Array (Name × ArchNode) :=
  es.map fun e => unsafeCast e

@[implemented_by castBlueprintEntriesUnsafe]
opaque castBlueprintEntries (es : Array EnvExtensionEntry) : Array (Name × ArchNode)

/-- The `blueprint` field of the report: `{present: false}` when the environment does not declare
`Architect.blueprintExt` (the package does not use LeanArchitect); else `{present: true,
extension, layout_problem, entries}`, each entry the declaration, its module, `latexLabel`, the
labels of `statement.uses` and `proof.uses` (null without a proof part) and `notReady`, from every
module of the environment, in module order. -/
def blueprintJson (ctx : Ctx) : Json := Id.run do
  let env := ctx.env
  unless env.contains blueprintExtName do
    return Json.mkObj [("present", toJson false)]
  let problem := blueprintLayoutProblem env
  let mut out : Array Json := #[]
  if problem.isNone then
    for i in [0:ctx.moduleNames.size] do
      let data := env.header.moduleData[i]!
      for (extName, es) in data.entries do
        if extName == blueprintExtName then
          for (n, node) in castBlueprintEntries es do
            out := out.push (Json.mkObj [
              ("name", toJson n.toString),
              ("module", toJson ctx.moduleNames[i]!.toString),
              ("label", toJson node.latexLabel),
              ("statement_uses", toJson node.statement.uses),
              ("proof_uses", toJson (node.proof.map (·.uses))),
              ("not_ready", toJson node.notReady)])
  return Json.mkObj [
    ("present", toJson true),
    ("extension", toJson blueprintExtName.toString),
    ("layout_problem", toJson problem),
    ("entries", Json.arr out)]
/-- `--declarations FILE`: one JSON line per constant of the environment whose name is not
internal (`Name.isInternal`: no component starting with `_`, so no `_private` names and no
`_proof_N`/`_auxLemma` auxiliaries; matchers such as `f.match_1` are kept), module by module in the order of `moduleNames`: its `name`, `kind`,
`module` and `signature` (the name, ` : `, and the type as `type_pp` prints it: Lean's plain
expression printer, no notation and no delaborator of the environment, which would be code of
the imports). The first line is `{format, nonce, count}`. Fyan adds the toolchain and
dependency key and reads it strictly (`fyan/prover/environment.py`). -/
def declarationLines (ctx : Ctx) : Array String := Id.run do
  let mut out : Array String := #[]
  for i in [0:ctx.env.header.moduleData.size] do
    let data := ctx.env.header.moduleData[i]!
    for ci in data.constants do
      unless ci.name.isInternal do
        out := out.push (Json.mkObj [
          ("name", toJson ci.name.toString),
          ("kind", toJson (kindName ci)),
          ("module", toJson (ctx.moduleText ci.name)),
          ("signature", toJson (ci.name.toString ++ " : " ++ truncate (toString ci.type) 2000))]).compress
  return out

def writeDeclarations (ctx : Ctx) (nonce : String) (path : System.FilePath) : IO Unit := do
  let lines := declarationLines ctx
  IO.FS.withFile path .write fun h => do
    h.putStrLn (Json.mkObj [("format", toJson "fyan-inspector-declarations/1"), ("nonce", toJson nonce),
                            ("count", toJson lines.size)]).compress
    for line in lines do
      h.putStrLn line

def header (nonce : String) : List (String × Json) :=
  [("format", toJson format), ("nonce", toJson nonce), ("lean_version", toJson Lean.versionString),
   ("import_level", toJson "private")]

def run (a : Args) : IO Json := do
  initSearchPath (← findSysroot) a.searchPath.toList
  let targets := a.modules ++ a.imports
  -- `level := .private`: every body and private declaration of a `module` file (module docs)
  let env ← importModules (targets.map fun m => ({ module := m } : Import)) {} (level := OLeanLevel.private)
  let ctx := Ctx.mk' env
  let mut interest : Array Name := #[]
  let mut problems : Array String := #[]
  for m in a.modules do
    match ctx.moduleIdx.get? m with
    | some i => interest := interest ++ env.header.moduleData[i]!.constNames
    | none => problems := problems.push s!"module {m} is not in the environment"
  for n in a.names do
    if env.contains n then
      interest := interest.push n
  let black := a.blackBox.foldl (fun s n => s.insert n) ({} : NameSet)
  let reach := transitiveMarks env interest black
  if let some path := a.declarations then
    writeDeclarations ctx a.nonce path
  let home : Option NameSet :=
    if a.followReferences then some (a.imports.foldl (fun s m => s.insert m) ({} : NameSet)) else none
  return Json.mkObj (header a.nonce ++ [
    ("modules", Json.arr (a.modules.map (moduleJson ctx reach))),
    ("lookups", Json.arr (a.names.map (lookupJson ctx reach a.localPrefix home))),
    ("problems", toJson problems),
    ("blueprint", blueprintJson ctx),
    ("error", Json.null)])

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
        report := Json.mkObj (FyanInspector.header a.nonce ++ [
          ("modules", Json.arr #[]), ("lookups", Json.arr #[]), ("problems", toJson ([] : List String)),
          ("blueprint", Json.mkObj [("present", toJson false)]),
          ("error", toJson (toString e))])
      IO.FS.writeFile out (report.compress ++ "\n")
      return 0
