"""Documents of the kinds whose PDFs intake reads, written here in TeX so that every statement's
extent is known from its source: a blueprint printed with ``showkeys``, an ``amsart`` paper, a
``book``, a ``thmtools`` document, a two-column article, lecture notes with run-in headings.
Each statement is given by its environment, title, TeX body, and the first and last words its
printed text must hold; between statements runs prose that no statement may hold
(``PROSE_MARK``). ``check`` compares what ``read_pdf`` found with that: missed statements (no
statement holds the first words), cut ones (the last words are missing) and run-on ones (the
prose after them is inside). Used by tests/test_intake_pdf_layout.py and scripts/pdf_extents.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PROSE_MARK = "interlude"


@dataclass
class Stmt:
    env: str
    body: str
    first: str
    last: str
    title: str = ""
    label: str = ""


@dataclass
class Doc:
    name: str
    cls: str
    preamble: str
    statements: list[Stmt]
    options: str = ""
    between: list[str] = field(default_factory=list)  # TeX after each statement (default: prose)
    needs: list[str] = field(default_factory=list)  # TeX files it needs beyond texlive-latex-recommended

    def missing(self) -> list[str]:
        """The files of ``needs`` this TeX installation lacks (``kpsewhich``)."""
        import shutil
        import subprocess

        if shutil.which("kpsewhich") is None:
            return list(self.needs)
        return [f for f in self.needs
                if subprocess.run(["kpsewhich", f], capture_output=True, text=True).stdout.strip() == ""]

    def tex(self) -> str:
        out = [f"\\documentclass[{self.options}]{{{self.cls}}}\n\\usepackage{{amsmath,amssymb,amsthm}}\n",
               self.preamble, "\n\\begin{document}\n\\section{Numbers}\n"]
        for k, st in enumerate(self.statements):
            title = f"[{st.title}]" if st.title else ""
            label = f"\\label{{{st.label}}}" if st.label else ""
            out.append(f"\\begin{{{st.env}}}{title}{label}\n{st.body}\n\\end{{{st.env}}}\n")
            after = self.between[k] if k < len(self.between) and self.between[k] else None
            out.append(after if after is not None else
                       f"The {PROSE_MARK} number {k} goes on for a while here, and it is no part of any "
                       "statement of the document at all.\n\n")
        out.append("\\end{document}\n")
        return "".join(out)


AMSTHM = r"""
\newtheorem{theorem}{Theorem}[section]
\newtheorem{lemma}[theorem]{Lemma}
\newtheorem{proposition}[theorem]{Proposition}
\theoremstyle{definition}
\newtheorem{definition}[theorem]{Definition}
\newtheorem{example}[theorem]{Example}
"""

LIST_DEF = Stmt("definition", "A map $f$ is \\textbf{tame} if it is such that\n\\begin{enumerate}\n"
                "\\item $f(0) = 0$,\n\\item $f(1) = 1$, and\n\\item $f$ is continuous at every point.\n"
                "\\end{enumerate}", "is tame if", "continuous at every point")
LIST_THM = Stmt("theorem", "Let $f$ be a map such that\n\\begin{enumerate}\n\\item[(i)] $f(0) = 0$, and\n"
                "\\item[(ii)] $f$ is increasing.\n\\end{enumerate}\nThen $f$ is nonnegative on the reals.",
                "Let f be a map", "nonnegative on the reals")
LIST_PARAGRAPHS = Stmt("definition", "A map $g$ is \\textbf{calm} if\n\\begin{enumerate}\n"
                       "\\item $g$ is bounded on every interval.\n\n\\noindent Note that the bound may depend on "
                       "the interval chosen for it.\n\\item $g$ is measurable.\n\\end{enumerate}",
                       "is calm if", "is measurable")
UPRIGHT_LIST_THM = Stmt("theorem", "Every map $g$ with\n\\begin{itemize}\\upshape\n\\item $g(-x) = -g(x)$ for "
                        "all real numbers $x$,\n\\item $g(0) = 0$\n\\end{itemize}\nis odd in the sense above.",
                        "Every map g with", "odd in the sense above")
DISPLAY_DEF = Stmt("definition", "A number $x$ is \\textbf{small} if\n\\[ |x| < 1. \\]", "is small if", "< 1")
DISPLAY_THM = Stmt("theorem", "For every prime $p$ and every integer $a$,\n\\begin{equation}\n"
                   "a^p \\equiv a \\pmod p.\n\\end{equation}", "every prime p", "mod p")
PLAIN = [Stmt("lemma", f"Every integer {w} is an integer of its own kind.", f"integer {w}", "of its own kind")
         for w in ("alpha", "beta", "gamma")]


def documents() -> list[Doc]:
    """The documents, one per kind."""
    showkeys = Doc("blueprint-showkeys", "article", "\\usepackage{showkeys}" + AMSTHM,
                   [Stmt(s.env, s.body, s.first, s.last, label=f"key:{k}-long-label-name")
                    for k, s in enumerate([PLAIN[0], LIST_DEF, DISPLAY_THM, PLAIN[1], LIST_THM])])
    amsart = Doc("amsart-paper", "amsart", AMSTHM + "\\newtheorem{nonexamples}[theorem]{Non-examples}\n",
                 [PLAIN[0], LIST_THM, DISPLAY_DEF, LIST_DEF, DISPLAY_THM, LIST_PARAGRAPHS,
                  Stmt("nonexamples", "The empty map is not calm in any sense.", "empty map", "in any sense"),
                  UPRIGHT_LIST_THM, PLAIN[1]])
    book = Doc("book", "book", "\\usepackage{graphicx}" + AMSTHM.replace("[section]", "[chapter]"),
               [Stmt("theorem", "There are infinitely many primes.", "infinitely many primes", "many primes",
                     title="Euclid\\footnote{See the Elements, Book IX.}"),
                PLAIN[0], LIST_DEF, DISPLAY_THM, PLAIN[2]],
               between=["", "\\begin{figure}[h]\\centering\\rule{3cm}{1cm}\\caption{A box of ink.}\\end{figure}\n"
                        "The interlude after a figure goes on for a while, and it is no part of any statement.\n\n"])
    tight_examples = [PLAIN[0], Stmt("example", "Every left-absorptive monoid here is trivial.",
                                     "left-absorptive monoid", "is trivial", title="Left-absorptive"),
                      LIST_DEF, Stmt("example", "A second example of a monoid.", "second example", "of a monoid"),
                      DISPLAY_THM]
    non_examples = ["", "\\paragraph{Non-examples.} The interlude of non-examples is no part of any "
                    "statement of the document at all.\n\n"]
    tight = ("\\newtheoremstyle{tight}{}{}{}{}{\\bfseries}{.}{ }{\\thmname{#1}\\thmnumber{#2}\\thmnote{ (#3)}}\n")
    thmtools = Doc("thmtools", "article",
                   "\\usepackage{thmtools}\n\\declaretheorem[numberwithin=section]{theorem}\n"
                   "\\declaretheorem[sibling=theorem]{lemma}\n\\declaretheorem[sibling=theorem,style=definition]"
                   "{definition}\n" + tight + "\\declaretheorem[sibling=theorem,style=tight,name=Example]{example}\n",
                   tight_examples, between=non_examples, needs=["thmtools.sty"])
    tight_style = Doc("tight-heading-style", "article",
                      AMSTHM.replace("\\newtheorem{example}[theorem]{Example}\n", "")
                      + tight + "\\theoremstyle{tight}\n\\newtheorem{example}[theorem]{Example}\n",
                      tight_examples, between=non_examples)
    short_italic = Doc("short-italic-paper", "article", AMSTHM,  # more italic theorem text than prose
                               [PLAIN[0], DISPLAY_DEF, DISPLAY_THM, PLAIN[1]],
                               between=["", f"The {PROSE_MARK} right after the definition is set in the body font, "
                                        "and it is no part of any statement of the document at all.\n\n"])
    twocol = Doc("two-column", "article", AMSTHM, [PLAIN[0], LIST_DEF, DISPLAY_THM, PLAIN[1], LIST_THM, PLAIN[2],
                                                   DISPLAY_DEF, LIST_PARAGRAPHS], options="twocolumn")
    notes = Doc("notes-run-in", "amsart", AMSTHM,
                [PLAIN[0], DISPLAY_DEF, LIST_THM, PLAIN[1]],
                between=["", "\\subsubsection{Run-in} The interlude under a run-in heading is no part of any "
                         "statement of the document at all.\n\n"])
    return [showkeys, amsart, book, thmtools, tight_style, short_italic, twocol, notes]


@dataclass
class Outcome:
    document: str
    expected: int
    missed: list[str]
    cut: list[str]
    run_on: list[str]


def check(doc: Doc, statements) -> Outcome:
    """Compare the statements ``read_pdf`` found (``Catalogue.statements``) with ``doc``'s: each
    expected statement is the found one whose text holds its first words (spaces ignored)."""

    def flat(text: str) -> str:
        return "".join(text.split())

    found = [(flat(s.body), s) for s in statements]
    missed, cut, run_on = [], [], []
    for k, st in enumerate(doc.statements):
        name = f"{doc.name} #{k + 1} ({st.first})"
        hit = next((s for body, s in found if flat(st.first) in body), None)
        if hit is None:
            missed.append(name)
            continue
        body = flat(hit.body)
        if flat(st.last) not in body:
            cut.append(name)
        if PROSE_MARK in hit.body:
            run_on.append(name)
    return Outcome(doc.name, len(doc.statements), missed, cut, run_on)
