"""The environment policy by effect: one row per persistent environment extension Lean registers.

Every attribute, instance, docstring, compiler cache, syntax rule, ... a module adds is an entry of
some *persistent environment extension* (``registerPersistentEnvExtension``, src/Lean/Environment.lean
in leanprover/lean4), stored in its ``.olean`` under the extension's name. The completion gate
decides what a unit's modules may register from the *effect* of each extension, classified here
once, not from which extensions a few honest modules happen to write:

* **bookkeeping** (admitted): documentation, declaration ranges and names, compiler caches and
  hints, equation information, generated eliminators, sets of kernel-checked lemmas that proof
  automation uses (``simp``, ``ext``, ``grind``, ...), linter logs, and attributes Lean lets a
  module put only on its own declarations (a tag attribute refuses a declaration of another
  module: ``TagAttribute``, src/Lean/Attributes.lean). None of them changes what a statement of
  another unit means or what the kernel accepts.
* **meaning for later statements**: instances and unification hints have a rule of their own —
  admitted here, then ``fyan.lean.policy.foreign_meaning_findings`` decides ownership from the
  keys Lean stored; aliases (``export``) are admitted (a second name for a constant: the gate
  compares elaborated terms); default instances, coercion attributes, custom eliminators,
  reducibility of other modules' constants, syntax, macros, elaborators, notation and
  pretty-printers are refused.
* **trusting the compiler** (``implemented_by``, ``extern``, ``export``, ``csimp``, ``init``,
  computed fields, constant folders): refused.

An extension no row names is refused, naming it, the module that registers it (from a
``_private.<Module>.0.`` prefix, else the declaration it is named after) and how to admit it
(``[lean] extension_allowlist``, validated by ``refused_allowlist_entries``). The rows are kept
complete by a core-tier test that lists every persistent extension the suite's real Lean 4.35.0
registers (``lean --stats``: ``extension '<name>'`` per registered extension,
``tests/test_extension_registry.py``) and by ``fyan selftest``, which lists every extension of the
user's toolchain and of the project's dependencies that no row classifies (``unclassified``).

Sources: the Lean rows (``LEAN_ROWS``) are the extensions the real ``lean`` 4.35.0 (commit
``eb6cafb7290e``) registers, each cited by the module of leanprover/lean4 that registers it; the
library rows cite leanprover-community/mathlib4 (``_MATHLIB_ROWS``: the extensions Mathlib's
``@[gcongr]``, ``@[fun_prop]``, ``@[to_additive]``, ``@[simps]``, ``norm_num`` and ``positivity``
register, each with its file and ``initialize`` line), leanprover-community/aesop (``_AESOP_ROWS``:
the rule sets ``default`` and ``builtin`` and the statistics log) and leanprover-community/batteries
(``_BATTERIES_ROWS``: ``alias``, ``library_note``, ``@[nolint]``, ``@[trans]``, linters and code
actions); only what was read there, not run (no Mathlib in Fyan's tests). ``fyan selftest
<project>`` lists the rest of a project's dependencies' extensions from its own Lake package, and
compiles Mathlib controls there, until a row or the allow-list covers them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the Lean build whose registry the rows cover completely (the suite's core tier)
LEAN_SOURCE = "leanprover/lean4 @ v4.35.0 (eb6cafb7290e)"


@dataclass(frozen=True)
class Effect:
    """What entries of an extension do. ``admitted``: the gate accepts them (an ``instance`` or
    ``unification hint`` then still passes the ownership rule); ``what``: the effect in words;
    ``remedy``: what a formalizer does when refused (empty when admitted)."""

    key: str
    admitted: bool
    what: str
    remedy: str = ""


EFFECTS: dict[str, Effect] = {e.key: e for e in (
    Effect("docs", True, "documentation (docstrings, module docs, spellings, explanations)"),
    Effect("source", True, "source bookkeeping (declaration ranges, namespaces, protected and private names, "
                           "module uses, deprecations)"),
    Effect("compiler", True, "compiler output, caches and hints for the module's own code (the kernel never runs "
                             "it; native_decide and the compiler axioms are refused by the axiom audit)"),
    Effect("generated", True, "declarations Lean generates (eliminators, no-confusion, matchers, structure and "
                              "projection information, equation and induction information)"),
    Effect("lemmas", True, "a set of kernel-checked lemmas proof automation uses (simp, ext, grind, norm_cast, "
                           "...): it changes how tactics search, never what a statement means"),
    Effect("linter", True, "linter logs and linter configuration (they do not take part in a decision)"),
    Effect("generator", True, "records of a declaration generator of a library (Mathlib's `to_additive` "
                              "translations, the projections `simps` generated lemmas from): which declarations it "
                              "made or how it names and shapes the next ones; what it generates is elaborated and "
                              "kernel-checked like any declaration, so a record never changes what a statement means"),
    Effect("own", True, "an attribute Lean allows only on the module's own declarations, changing only how those "
                        "are elaborated or shown"),
    Effect("class", True, "a class the module declares (its own)"),
    Effect("reducible", True, "reducibility of the module's own declarations (an own alias is followed by the "
                              "ownership rule of instances)"),
    Effect("alias", True, "an alias (`export`): a second name for a constant; statements are compared as "
                          "elaborated terms, so a name cannot change what a checked statement means"),
    Effect("instance", True, "an instance: changes how later statements elaborate (rule: the unit must own a "
                             "constant that survives in the keys Lean stored for it)"),
    Effect("unification_hint", True, "a unification hint: changes how later statements elaborate (rule: as "
                                     "instances, ownership)"),
    Effect("meaning", False, "changes how later statements elaborate (default instances, coercion attributes, "
                             "custom eliminators, reducibility of another module's constants)",
           "remove the attribute; state the instance or coercion explicitly, or declare it in the plan"),
    Effect("syntax", False, "new syntax, notation or macros (rewrite what later text means)",
           "write the term without new syntax (a `def` instead of `notation`/`macro`)"),
    Effect("meta", False, "meta-code run while elaborating or in the editor (elaborators, tactics, simprocs, "
                          "delaborators, linters, widgets, code actions, new attributes)",
           "prove with the existing tactics; meta-code is not part of a theorem unit"),
    Effect("compiler_trust", False, "trusts compiled or foreign code, or runs code at import "
                                    "(implemented_by, extern, export, csimp, init, computed fields)",
           "remove the attribute; a theorem unit never needs compiled code"),
)}

#: ``name | effect | registering module`` (leanprover/lean4 @ v4.35.0 unless the module says otherwise)
_LEAN_ROWS = """
Lean.errorExplanationExt | docs | Lean.ErrorExplanation
Lean.auxRecExt | generated | Lean.AuxRecursor
_private.Lean.AuxRecursor.0.Lean.sparseCasesOnExt | generated | Lean.AuxRecursor
Lean.noConfusionExt | generated | Lean.AuxRecursor
Lean.declRangeExt | source | Lean.DeclarationRange
Lean.protectedExt | source | Lean.Modifiers
_private.Lean.Namespace.0.Lean.namespacesExt | source | Lean.Namespace
Lean.aliasExtension | alias | Lean.ResolveName
Lean.Doc.deferredCheckExt | docs | Lean.DocString.Extension
Lean.docStringExt | docs | Lean.DocString.Extension
_private.Lean.DocString.Extension.0.Lean.inheritDocStringExt | docs | Lean.DocString.Extension
Lean.versoDocStringExt | docs | Lean.DocString.Extension
_private.Lean.DocString.Extension.0.Lean.moduleDocExt | docs | Lean.DocString.Extension
_private.Lean.DocString.Extension.0.Lean.versoModuleDocExt | docs | Lean.DocString.Extension
Lean.noncomputableExt | compiler | Lean.Compiler.NoncomputableAttr
_private.Lean.Compiler.MetaAttr.0.Lean.metaExt | meta | Lean.Compiler.MetaAttr
_private.Lean.Compiler.MetaAttr.0.Lean.declMetaExt | meta | Lean.Compiler.MetaAttr
Lean.attributeExtension | meta | Lean.Attributes
Lean.classExtension | class | Lean.Class
reducibilityCore | reducible | Lean.ReducibilityAttrs
reducibilityExtra | meaning | Lean.ReducibilityAttrs
recExt | generated | Lean.Meta.RecExt
Lean.Compiler.inlineAttrs | compiler | Lean.Compiler.InlineAttrs
Lean.Compiler.nospecializeAttr | compiler | Lean.Compiler.Specialize
Lean.Compiler.weakSpecializeAttr | compiler | Lean.Compiler.Specialize
Lean.Compiler.specializeAttr | compiler | Lean.Compiler.Specialize
Lean.projectionFnInfoExt | generated | Lean.ProjFns
Lean.auxParentProjInfoExt | generated | Lean.ProjFns
Lean.externAttr | compiler_trust | Lean.Compiler.ExternAttr
Lean.Compiler.implementedByAttr | compiler_trust | Lean.Compiler.ImplementedByAttr
Lean.neverExtractAttr | compiler | Lean.Compiler.NeverExtractAttr
Lean.exportAttr | compiler_trust | Lean.Compiler.ExportAttr
_private.Lean.Util.CollectAxioms.0.Lean.exportedAxiomsExt | source | Lean.Util.CollectAxioms
_private.Lean.OriginalConstKind.0.Lean.privateConstKindsExt | source | Lean.OriginalConstKind
_private.Lean.Structure.0.Lean.structureExt | generated | Lean.Structure
Lean.Linter.linterSetsExt | linter | Lean.Linter.Basic
envLinterSnapshotExt | linter | Lean.Linter.EnvLinter
_private.Lean.Compiler.ModPkgExt.0.Lean.modPkgExt | source | Lean.Compiler.ModPkgExt
Lean.regularInitAttr | compiler_trust | Lean.Compiler.InitAttr
Lean.builtinInitAttr | compiler_trust | Lean.Compiler.InitAttr
Lean.matchPatternAttr | own | Lean.Meta.Match.MatchPatternAttr
Lean.Meta.Match.Extension.extension | generated | Lean.Meta.Match.MatcherInfo
Lean.Meta.matcherLikeExt | own | Lean.Meta.Match.MatcherInfo
Lean.Meta.instanceExtension | instance | Lean.Meta.Instances
Lean.Meta.defaultInstanceExtension | meaning | Lean.Meta.Instances
Lean.IR.declMapExt | compiler | Lean.Compiler.IR.CompilerM
Lean.IR.UnboxResult.unboxAttr | compiler | Lean.Compiler.IR.UnboxResult
_private.Lean.Compiler.LCNF.MonoTypes.0.Lean.Compiler.LCNF.trivialStructureInfoExt | compiler | Lean.Compiler.LCNF.MonoTypes
Lean.Compiler.LCNF.monoTypeExt | compiler | Lean.Compiler.LCNF.MonoTypes
Lean.indirectModUseExt | source | Lean.ExtraModUses
_private.Lean.ExtraModUses.0.Lean.extraModUses | source | Lean.ExtraModUses
_private.Lean.ExtraModUses.0.Lean.isExtraRevModUseExt | source | Lean.ExtraModUses
Lean.Compiler.CSimp.ext | compiler_trust | Lean.Compiler.CSimpAttr
Lean.Compiler.LCNF.baseExt | compiler | Lean.Compiler.LCNF.PhaseExt
Lean.Compiler.LCNF.monoExt | compiler | Lean.Compiler.LCNF.PhaseExt
Lean.Compiler.LCNF.impureSigExt | compiler | Lean.Compiler.LCNF.PhaseExt
_private.Lean.Compiler.LCNF.ToImpureType.0.Lean.Compiler.LCNF.impureTypeExt | compiler | Lean.Compiler.LCNF.ToImpureType
_private.Lean.Compiler.LCNF.ToImpureType.0.Lean.Compiler.LCNF.impureTrivialStructureInfoExt | compiler | Lean.Compiler.LCNF.ToImpureType
_private.Lean.Compiler.LCNF.ToImpureType.0.Lean.Compiler.LCNF.ctorLayoutExt | compiler | Lean.Compiler.LCNF.ToImpureType
Lean.Compiler.LCNF.specExtension | compiler | Lean.Compiler.LCNF.SpecInfo
Lean.Compiler.LCNF.Simp.ConstantFold.folderExt | compiler_trust | Lean.Compiler.LCNF.Simp.ConstantFold
_private.Lean.Compiler.LCNF.Specialize.0.Lean.Compiler.LCNF.Specialize.specCacheExt | compiler | Lean.Compiler.LCNF.Specialize
Lean.Compiler.LCNF.UnreachableBranches.functionSummariesExt | compiler | Lean.Compiler.LCNF.ElimDeadBranches
_private.Lean.Compiler.LCNF.ToImpure.0.Lean.Compiler.LCNF.taggedReturnAttr | compiler_trust | Lean.Compiler.LCNF.ToImpure
Lean.Compiler.LCNF.passManagerExt | meta | Lean.Compiler.LCNF.PassManager
Lean.Compiler.LCNF.postponedCompileDeclsExt | compiler | Lean.Compiler.LCNF.Main
Lean.Doc.docInlineMdExt | meta | Lean.DocString.Markdown
Lean.Doc.docBlockMdExt | meta | Lean.DocString.Markdown
Lean.Parser.parserExtension | syntax | Lean.Parser.Extension
Lean.PrettyPrinter.formatterAttribute | meta | Lean.PrettyPrinter.Formatter
Lean.PrettyPrinter.mkCombinatorFormatterAttribute | meta | Lean.PrettyPrinter.Formatter
Lean.PrettyPrinter.parenthesizerAttribute | meta | Lean.PrettyPrinter.Parenthesizer
Lean.PrettyPrinter.categoryParenthesizerAttribute | meta | Lean.PrettyPrinter.Parenthesizer
Lean.PrettyPrinter.mkCombinatorParenthesizerAttribute | meta | Lean.PrettyPrinter.Parenthesizer
Lean.Parser.Term.Doc.recommendedSpellingByNameExt | docs | Lean.Parser.Term.Doc
Lean.Parser.Term.Doc.recommendedSpellingExt | docs | Lean.Parser.Term.Doc
Lean.Parser.Tactic.Doc.tacticAlternativeExt | docs | Lean.Parser.Tactic.Doc
Lean.Parser.Tactic.Doc.knownTacticTagExt | docs | Lean.Parser.Tactic.Doc
Lean.Parser.Tactic.Doc.tacticTagExt | docs | Lean.Parser.Tactic.Doc
Lean.Parser.Tactic.Doc.tacticDocExtExt | docs | Lean.Parser.Tactic.Doc
Lean.Parser.Tactic.Doc.tacticNameExt | docs | Lean.Parser.Tactic.Doc
Lean.deprecatedModuleExt | source | Lean.DeprecatedModule
Lean.ppUsingAnonymousConstructorAttr | own | Lean.PrettyPrinter.Delaborator.Options
Lean.ppNoDotAttr | own | Lean.PrettyPrinter.Delaborator.Options
Lean.PrettyPrinter.Delaborator.delabAttribute | meta | Lean.PrettyPrinter.Delaborator.Basic
Lean.PrettyPrinter.Delaborator.appUnexpanderAttribute | meta | Lean.PrettyPrinter.Delaborator.Basic
Lean.Meta.coeExt | meaning | Lean.Meta.CoeAttr
Lean.backwardDefeqAttr | own | Lean.Meta.Basic
Lean.defeqAttr | own | Lean.DefEqAttrib
Lean.Meta.recursorAttribute | own | Lean.Meta.RecursorInfo
Lean.Meta.eqnOptionsExt | generated | Lean.Meta.Eqns
Lean.Meta.congrKindsExt | lemmas | Lean.Meta.CongrTheorems
Lean.Meta.congrExtension | lemmas | Lean.Meta.Tactic.Simp.SimpCongrTheorems
Lean.Meta.Simp.simprocDeclExt | meta | Lean.Meta.Tactic.Simp.Simproc
Lean.Meta.Simp.simprocExtension | meta | Lean.Meta.Tactic.Simp.Simproc
Lean.Meta.Simp.simprocSEvalExtension | meta | Lean.Meta.Tactic.Simp.Simproc
Lean.Meta.simpExtension | lemmas | Lean.Meta.Tactic.Simp.Attr
Lean.Meta.sevalSimpExtension | lemmas | Lean.Meta.Tactic.Simp.Attr
Lean.Meta.completionBlackListExt | source | Lean.Meta.CompletionName
Lean.Linter.deprecatedAttr | source | Lean.Linter.Deprecated
_private.Lean.Meta.Constructions.SparseCasesOn.0.Lean.Meta.sparseCasesOnInfoExt | generated | Lean.Meta.Constructions.SparseCasesOn
Lean.Meta.coeDeclAttr | meaning | Lean.Meta.CoeDecl
Lean.Elab.macroAttribute | syntax | Lean.Elab.Util
Lean.Elab.deprecatedSyntaxExt | source | Lean.Elab.DeprecatedSyntax
Lean.Elab.Term.termElabAttribute | meta | Lean.Elab.Term
Lean.Doc.codeSuggestionExt | meta | Lean.Elab.DocString
Lean.Doc.codeBlockSuggestionExt | meta | Lean.Elab.DocString
Lean.Doc.docRoleExt | meta | Lean.Elab.DocString
Lean.Doc.docCodeBlockExt | meta | Lean.Elab.DocString
Lean.Doc.docDirectiveExt | meta | Lean.Elab.DocString
Lean.Doc.docCommandExt | meta | Lean.Elab.DocString
Lean.Elab.incrementalAttr | meta | Lean.Elab.InfoTree.Main
Lean.Elab.Term.Quotation.precheckAttribute | meta | Lean.Elab.Quotation.Precheck
Lean.Elab.Tactic.tacticElabAttribute | meta | Lean.Elab.Tactic.Basic
Lean.Elab.Tactic.noFallbackAttr | meta | Lean.Elab.Tactic.Basic
Lean.Linter.lintLogExt | linter | Lean.Linter.Basic
Lean.Linter.codeQualityLogExt | linter | Lean.Linter.Basic
Lean.Elab.Command.commandElabAttribute | meta | Lean.Elab.Command
Lean.Meta.customEliminatorExt | meaning | Lean.Meta.Tactic.ElimInfo
Lean.identifierSuggestForAttr.existingToIncorrect | docs | Lean.IdentifierSuggestion
Lean.identifierSuggestForAttr.incorrectToExisting | docs | Lean.IdentifierSuggestion
Lean.Elab.deprecatedArgExt | source | Lean.Elab.DeprecatedArg
Lean.Elab.Term.elabWithoutExpectedTypeAttr | own | Lean.Elab.App
Lean.Elab.Term.elabAsElim | own | Lean.Elab.App
Lean.Linter.MissingDocs.missingDocsExt | meta | Lean.Linter.MissingDocs
Lean.Elab.Structural.eqnInfoExt | generated | Lean.Elab.PreDefinition.Structural.Eqns
Lean.Linter.unusedVariablesIgnoreFnsExt | meta | Lean.Linter.UnusedVariables
Lean.Server.codeActionProviderExt | meta | Lean.Server.CodeActions.Attr
Lean.CodeAction.holeCodeActionExt | meta | Lean.Elab.Tactic.Doc
Lean.CodeAction.cmdCodeActionExt | meta | Lean.Server.CodeActions.Attr
Lean.Server.userRpcProcedures | meta | Lean.Server.Rpc.RequestHandling
_private.Lean.Widget.UserWidget.0.Lean.Widget.moduleRegistry | meta | Lean.Widget.UserWidget
_private.Lean.Widget.UserWidget.0.Lean.Widget.panelWidgetsExt | meta | Lean.Widget.UserWidget
Lean.Elab.WF.eqnInfoExt | generated | Lean.Elab.PreDefinition.WF.Eqns
_private.Lean.Meta.MethodSpecs.0.Lean.methodSpecsAttr | own | Lean.Meta.MethodSpecs
_private.Lean.Meta.MethodSpecs.0.Lean.methodSpecsSimpExtension | lemmas | Lean.Meta.MethodSpecs
Lean.Elab.WF.wfPreprocessSimpExtension | lemmas | Lean.Elab.PreDefinition.WF.Preprocess
Lean.Elab.PartialFixpoint.eqnInfoExt | generated | Lean.Elab.PreDefinition.PartialFixpoint.Eqns
Lean.Meta.Monotonicity.monotoneExt | lemmas | Lean.Elab.Tactic.Monotonicity
Lean.Elab.ComputedFields.computedFieldAttr | compiler_trust | Lean.Elab.ComputedFields
Lean.Elab.Command.inductiveElabAttr | meta | Lean.Elab.Inductive
Lean.Meta.funIndInfoExt | generated | Lean.Meta.Tactic.FunIndInfo
Lean.Elab.Do.controlInfoElemAttribute | meta | Lean.Elab.Do
Lean.Elab.Do.doElemElabAttribute | meta | Lean.Elab.Do
_private.Lean.Elab.Tactic.Grind.Annotated.0.Lean.Elab.Tactic.Grind.grindAnnotatedExt | lemmas | Lean.Elab.Tactic.Grind.Annotated
Lean.LibrarySuggestions.moduleDenyListExt | linter | Lean.LibrarySuggestions.Basic
Lean.LibrarySuggestions.nameDenyListExt | linter | Lean.LibrarySuggestions.Basic
Lean.LibrarySuggestions.typePrefixDenyListExt | linter | Lean.LibrarySuggestions.Basic
Lean.LibrarySuggestions.librarySuggestionsExt | meta | Lean.LibrarySuggestions.Basic
Lean.LibrarySuggestions.librarySuggestionsAttr | meta | Lean.LibrarySuggestions.Basic
Lean.Meta.Tactic.Cbv.cbvSimprocDeclExt | meta | Lean.Meta.Tactic.Cbv
cbvSimprocExt | meta | Lean.Meta.Tactic.Cbv
cbvOpaqueExt | lemmas | Lean.Meta.Tactic.Cbv
cbvEvalExt | lemmas | Lean.Meta.Tactic.Cbv
Lean.Meta.Sym.Simp.symSimpExtension | lemmas | Lean.Meta.Sym.Simp
symSimpVariantExtension | lemmas | Lean.Meta.Sym.Simp
symDSimpVariantExtension | lemmas | Lean.Meta.Sym.Simp
_private.Lean.Meta.Tactic.Grind.EMatchTheorem.0.Lean.Meta.Grind.symbolPrioExt | lemmas | Lean.Meta.Tactic.Grind.EMatchTheorem
Lean.Meta.Ext.extExtension | lemmas | Lean.Meta.Tactic.Ext
Lean.Meta.Grind.homoExt | lemmas | Lean.Meta.Tactic.Grind
Lean.Meta.Grind.homoSourceTypesExt | lemmas | Lean.Meta.Tactic.Grind
Lean.Meta.Grind.homoPredExt | lemmas | Lean.Meta.Tactic.Grind
Lean.Meta.Grind.normExt | lemmas | Lean.Meta.Tactic.Grind.Attr
Lean.Meta.Grind.grindExt | lemmas | Lean.Meta.Tactic.Grind.Attr
Lean.Meta.Grind.liaExt | lemmas | Lean.Meta.Tactic.Grind.Attr
Lean.Elab.Tactic.Omega.bitvec_to_nat | lemmas | Lean.Elab.Tactic.Omega.OmegaM
Lean.Meta.NormCast.pushCastExt | lemmas | Lean.Meta.Tactic.NormCast
Lean.Meta.NormCast.normCastExt.up | lemmas | Lean.Meta.Tactic.NormCast
Lean.Meta.NormCast.normCastExt.down | lemmas | Lean.Meta.Tactic.NormCast
Lean.Meta.NormCast.normCastExt.squash | lemmas | Lean.Meta.Tactic.NormCast
Lean.Meta.Symm.symmExt | lemmas | Lean.Meta.Tactic.Symm
Lean.Meta.Rfl.reflExt | lemmas | Lean.Meta.Tactic.Rfl
Lean.Meta.Tactic.BVDecide.bvNormalizeExt | lemmas | Lean.Elab.Tactic.BVDecide.Frontend.Attr
Lean.Meta.Tactic.BVDecide.symIntToBitVecExt | lemmas | Lean.Elab.Tactic.BVDecide.Frontend.Attr
Lean.Meta.Tactic.BVDecide.metaIntToBitVecExt | lemmas | Lean.Elab.Tactic.BVDecide.Frontend.Attr
Lean.bool_to_prop | lemmas | Lean.Elab.Tactic.BoolToPropSimps
Lean.Elab.Tactic.Grind.grindTacElabAttribute | meta | Lean.Elab.Tactic.Grind.Basic
_private.Lean.Elab.Tactic.Grind.Lint.0.Lean.Elab.Tactic.Grind.skipExt | linter | Lean.Elab.Tactic.Grind.Lint
_private.Lean.Elab.Tactic.Grind.Lint.0.Lean.Elab.Tactic.Grind.skipSuffixExt | linter | Lean.Elab.Tactic.Grind.Lint
_private.Lean.Elab.Tactic.Grind.Lint.0.Lean.Elab.Tactic.Grind.muteExt | linter | Lean.Elab.Tactic.Grind.Lint
Lean.Elab.Tactic.Grind.symSimprocElabAttribute | meta | Lean.Elab.Tactic.Grind.Sym
Lean.Elab.Tactic.Grind.symDischargerElabAttribute | meta | Lean.Elab.Tactic.Grind.Sym
Lean.Elab.Tactic.Grind.symDSimprocElabAttribute | meta | Lean.Elab.Tactic.Grind.Sym
Lean.Elab.Tactic.Try.tryTacticElabAttribute | meta | Lean.Elab.Tactic.Try
Lean.Elab.Tactic.Try.trySuggestionExtension | meta | Lean.Elab.Tactic.Try
Std.Internal.treeTacExt | lemmas | Std.Data.DTreeMap.Internal.WF.Lemmas
Lean.Elab.Tactic.Do.SpecAttr.mvcgenSimpExt | lemmas | Lean.Elab.Tactic.Do.Attr
specMap | lemmas | Lean.Elab.Tactic.Do.Attr
internalSpecMap | lemmas | Lean.Elab.Tactic.Do.Attr
Lean.Elab.Tactic.Do.SpecAttr.specInvariantAttr | own | Lean.Elab.Tactic.Do.Attr
Lean.Elab.Tactic.VCGen.frameProcExt | meta | Lean.Elab.Tactic.Do.VCGen
Lean.Elab.Command.assertExistsExt | source | Lean.Elab.AssertExists
Lean.Doc.DeferredCheck.handlerExt | meta | Lean.DocString.DeferredCheck
Lean.Meta.unificationHintExtension | unification_hint | Lean.Meta.UnificationHint
Lean.Linter.CodeQuality.packageCheckExt | meta | Lean.Linter.CodeQuality
Lean.Linter.EnvLinter.envLinterExt | meta | Lean.Linter.EnvLinter
_private.Lean.LibrarySuggestions.SineQuaNon.0.Lean.LibrarySuggestions.SineQuaNon.triggerDenyListExt | linter | Lean.LibrarySuggestions.SineQuaNon
"""


@dataclass(frozen=True)
class Row:
    """One classified extension: its name as the ``.olean`` stores it, its ``Effect`` and where it is
    registered (``source``: repository @ version, module)."""

    name: str
    effect: Effect
    source: str


def _rows(text: str, origin: str) -> dict[str, Row]:
    out: dict[str, Row] = {}
    for line in text.strip().splitlines():
        name, effect, module = (part.strip() for part in line.split("|"))
        out[name] = Row(name, EFFECTS[effect], f"{origin}, {module}")
    return out


#: rows of libraries a project's package may require, cited from their source (registered by
#: `initialize` when imported: ``fyan selftest`` lists the ones no row covers)
_MATHLIB_ROWS = """
Mathlib.Tactic.GCongr.gcongrExt | lemmas | Mathlib/Tactic/GCongr/Core.lean @ 018d56f6: `initialize gcongrExt`
Mathlib.Meta.FunProp.functionTheoremsExt | lemmas | Mathlib/Tactic/FunProp/Theorems.lean @ 00fae574: `initialize functionTheoremsExt`
Mathlib.Meta.FunProp.lambdaTheoremsExt | lemmas | Mathlib/Tactic/FunProp/Theorems.lean @ 00fae574: `initialize lambdaTheoremsExt`
Mathlib.Meta.FunProp.transitionTheoremsExt | lemmas | Mathlib/Tactic/FunProp/Theorems.lean @ 00fae574: `initialize transitionTheoremsExt`
Mathlib.Meta.FunProp.morTheoremsExt | lemmas | Mathlib/Tactic/FunProp/Theorems.lean @ 00fae574: `initialize morTheoremsExt`
Mathlib.Meta.FunProp.funPropDeclsExt | lemmas | Mathlib/Tactic/FunProp/Decl.lean: `initialize funPropDeclsExt` (the properties `fun_prop` proves)
Mathlib.Tactic.ToAdditive.translations | generator | Mathlib/Tactic/Translate/ToAdditive.lean @ 00a92c5f: `initialize translations`
Mathlib.Tactic.ToAdditive.ignoreArgsAttr | generator | Mathlib/Tactic/Translate/ToAdditive.lean @ 00a92c5f: `initialize ignoreArgsAttr`
Mathlib.Tactic.ToAdditive.doTranslateAttr | generator | Mathlib/Tactic/Translate/ToAdditive.lean @ 00a92c5f: `initialize doTranslateAttr`
simpsAttr | generator | Mathlib/Tactic/Simps/Basic.lean: `initialize simpsAttr` (top level; a parametric attribute, own declarations only)
Simps.structureExt | generator | Mathlib/Tactic/Simps/Basic.lean: `namespace Simps` `initialize structureExt`
Mathlib.Meta.NormNum.normNumExt | meta | Mathlib/Tactic/NormNum/Core.lean: `initialize normNumExt` (norm_num extensions: meta-code)
Mathlib.Meta.Positivity.positivityExt | meta | Mathlib/Tactic/Positivity/Core.lean: `initialize positivityExt` (positivity extensions: meta-code)
"""
#: rows of Aesop (leanprover-community/aesop @ b5b9e2bb, 2026-06-17), which every Mathlib project
#: requires. A rule set ``<rs>`` is three extensions ``declareRuleSetUnchecked`` registers
#: (Aesop/Frontend/Extension.lean: ``registerSimpleScopedEnvExtension $ extensionDescr rsName`` named
#: ``rsName``; ``registerSimpAttr simpExtName (ref := simpExtName)`` with ``aesop_<rs>``;
#: ``Simp.registerSimprocAttr simprocExtName (name := simprocExtName)`` with ``aesop_<rs>_proc``);
#: Aesop's ``initialize builtinRuleSetNames.forM (declareRuleSetUnchecked …)`` declares ``default`` and
#: ``builtin`` (Aesop/RuleSet/Name.lean). The rule-set entries are rules proof search applies inside
#: proofs the kernel checks (as the simp sets: lemmas); the simproc set holds meta-code (refused, as
#: ``Lean.Meta.Simp.simprocExtension``). ``declare_aesop_rule_sets`` elaborates to ``meta initialize``
#: (Aesop/Frontend/Command.lean), refused with Lean's init attribute; rule sets Mathlib declares that
#: way are named by Mathlib and are not rows here (``fyan selftest`` lists them).
_AESOP_ROWS = """
default | lemmas | Aesop/Frontend/Extension.lean @ b5b9e2bb: `initialize builtinRuleSetNames.forM (declareRuleSetUnchecked …)` (rule set `default`: `registerSimpleScopedEnvExtension $ extensionDescr rsName`)
builtin | lemmas | Aesop/Frontend/Extension.lean @ b5b9e2bb: `initialize builtinRuleSetNames.forM (declareRuleSetUnchecked …)` (rule set `builtin`: `registerSimpleScopedEnvExtension $ extensionDescr rsName`)
aesop_default | lemmas | Aesop/Frontend/Extension.lean @ b5b9e2bb: `initialize builtinRuleSetNames.forM (declareRuleSetUnchecked …)` (`registerSimpAttr simpExtName`: the simp lemmas of rule set `default`)
aesop_builtin | lemmas | Aesop/Frontend/Extension.lean @ b5b9e2bb: `initialize builtinRuleSetNames.forM (declareRuleSetUnchecked …)` (`registerSimpAttr simpExtName`: the simp lemmas of rule set `builtin`)
aesop_default_proc | meta | Aesop/Frontend/Extension.lean @ b5b9e2bb: `initialize builtinRuleSetNames.forM (declareRuleSetUnchecked …)` (`Simp.registerSimprocAttr`: simprocs, meta-code)
aesop_builtin_proc | meta | Aesop/Frontend/Extension.lean @ b5b9e2bb: `initialize builtinRuleSetNames.forM (declareRuleSetUnchecked …)` (`Simp.registerSimprocAttr`: simprocs, meta-code)
Aesop.statsExtension | linter | Aesop/Stats/Extension.lean @ b5b9e2bb: `initialize statsExtension : StatsExtension ← registerSimplePersistentEnvExtension` (search statistics, a log)
"""
#: rows of Batteries (leanprover-community/batteries @ 45f65c8b, 2026-08-08), which every Mathlib
#: project requires; each names its file and ``initialize`` (namespace of the file at that line)
_BATTERIES_ROWS = """
Batteries.Tactic.Alias.aliasExt | source | Batteries/Tactic/Alias.lean @ 45f65c8b: `initialize aliasExt : MapDeclarationExtension AliasInfo ← mkMapDeclarationExtension` (what `alias` declared: the alias itself is an elaborated, kernel-checked declaration)
Batteries.Util.LibraryNote.libraryNoteExt | docs | Batteries/Util/LibraryNote.lean @ 45f65c8b: `initialize libraryNoteExt … ← registerSimplePersistentEnvExtension` (`library_note` texts)
Batteries.Tactic.Lint.nolintAttr | linter | Batteries/Tactic/Lint/Basic.lean @ 45f65c8b: `initialize nolintAttr : ParametricAttribute (Array Name) ← registerParametricAttribute` (`@[nolint]`, own declarations only)
Batteries.Linter.UnnecessarySeqFocus.multigoalAttr | linter | Batteries/Linter/UnnecessarySeqFocus.lean @ 45f65c8b: `initialize multigoalAttr : TagAttributeExtra ← registerTagAttributeExtra` (linter configuration)
Batteries.machineApplicableDeprecated | source | Batteries/CodeAction/Deprecated.lean @ 45f65c8b: `initialize machineApplicableDeprecated : TagDeclarationExtension ← mkTagDeclarationExtension` (deprecations marked for automatic replacement)
_private.Batteries.Util.ProofWanted.0.wantedInstancesExt | source | Batteries/Util/ProofWanted.lean @ 45f65c8b: `private initialize wantedInstancesExt … ← registerSimplePersistentEnvExtension` (file-local: `addImportedFn := fun _ => #[]`)
_private.Batteries.Util.ProofWanted.0.wantedArityExt | source | Batteries/Util/ProofWanted.lean @ 45f65c8b: `private initialize wantedArityExt … ← registerSimplePersistentEnvExtension` (file-local: `addImportedFn := fun _ => {}`)
Batteries.Tactic.transExt | lemmas | Batteries/Tactic/Trans.lean @ 45f65c8b: `initialize transExt … ← registerSimpleScopedEnvExtension` (`@[trans]` lemmas the `trans` tactic uses)
Batteries.Tactic.Lint.batteriesLinterExt | meta | Batteries/Tactic/Lint/Basic.lean @ 45f65c8b: `initialize batteriesLinterExt … ← registerSimplePersistentEnvExtension` (`@[env_linter]`: linters, meta-code run by `#lint`)
Batteries.CodeAction.tacticSeqCodeActionExt | meta | Batteries/CodeAction/Attr.lean @ 45f65c8b: `initialize tacticSeqCodeActionExt … ← registerPersistentEnvExtension` (code actions, meta-code run in the editor)
Batteries.CodeAction.tacticCodeActionExt | meta | Batteries/CodeAction/Attr.lean @ 45f65c8b: `initialize tacticCodeActionExt … ← registerPersistentEnvExtension` (code actions, meta-code run in the editor)
"""
AESOP_SOURCE = "leanprover-community/aesop"
BATTERIES_SOURCE = "leanprover-community/batteries"
#: where the library rows were read: each row names the file and its registering line; the
#: extension's name is the ``initialize`` declaration's (``decl_name%``, also through Batteries'
#: ``registerNameMapExtension (name := by exact decl_name%)`` and ``NameMapAttributeImpl.ref``,
#: Batteries/Lean/NameMapAttribute.lean @ 15b78703, and Lean's ``ParametricAttributeImpl.ref``)
MATHLIB_SOURCE = "leanprover-community/mathlib4"

#: the rows of Lean itself (complete for ``LEAN_SOURCE``: tests/test_extension_registry.py)
LEAN_ROWS: dict[str, Row] = _rows(_LEAN_ROWS, LEAN_SOURCE)
#: the rows of the libraries every Mathlib project requires (read in their source, not run here)
LIBRARY_ROWS: dict[str, Row] = {**_rows(_MATHLIB_ROWS, MATHLIB_SOURCE), **_rows(_AESOP_ROWS, AESOP_SOURCE),
                                **_rows(_BATTERIES_ROWS, BATTERIES_SOURCE)}
ROWS: dict[str, Row] = {**LEAN_ROWS, **LIBRARY_ROWS}

_PRIVATE_PREFIX = re.compile(r"^_private\.((?:[^.]+\.)*?)0\.")


def normalize(name: str) -> str:
    """``name`` without Lean's ``_private.<Module>.0.`` prefix (the same extension is private in one
    Lean version and public in another)."""
    return _PRIVATE_PREFIX.sub("", name, count=1)


_BY_NORMAL: dict[str, Row] = {normalize(n): r for n, r in ROWS.items()}


def row(name: str) -> Row | None:
    """The row classifying the extension ``name`` (raw or normalised), or None."""
    return ROWS.get(name) or _BY_NORMAL.get(normalize(name))


def registering_module(name: str) -> str:
    """Where the extension ``name`` is registered, as far as its name says: the module of a
    ``_private.<Module>.0.`` prefix, else the declaration it is named after (an extension's name is
    by default the declaration that registers it, ``decl_name%``: ``PersistentEnvExtensionDescr``)."""
    m = _PRIVATE_PREFIX.match(name)
    if m:
        return f"module {m.group(1).rstrip('.')}"
    known = row(name)
    if known is not None:
        return known.source
    return f"the module declaring `{normalize(name)}`"


def unclassified(names: list[str] | set[str] | tuple[str, ...]) -> list[str]:
    """The names among ``names`` that no row classifies, sorted."""
    return sorted({n for n in names if row(n) is None})


_STATS_LINE = re.compile(r"^extension '(.+)'$")


def registered_extensions(stats_output: str) -> list[str]:
    """The persistent extensions a ``lean --stats`` run lists (``extension '<name>'``, one line per
    registered persistent extension, in registration order)."""
    return [m.group(1) for line in stats_output.splitlines() if (m := _STATS_LINE.match(line.strip()))]
