"""Seed 000 Table 9's error bounds, proved or refuted, by job: ``formula`` (the monolithic
violation query, its exact re-check, bisection of alpha, twin refutation), ``lemmas`` (the bound
by its error sources, narrow UNSAT queries), ``report`` (Table 9 rows), ``tasks`` (Table 9 as campaign tasks) and ``exact`` (rational
re-check helpers, independent of the core). Every query goes through :mod:`smtmodel.solve`."""

from .exact import floor_log2, ulp_of, value_of
from .formula import (BoundFormula, BoundResult, beta_for, by_signature, prove_all, prove_bound, recheck,
                      signature, tfdpa_models, tightest, twin_refute)
from .lemmas import (TABLE9_OPS, TR_OPS, LemmaResult, e_range, half_model, ite_signed, ite_signed_bits,
                     lemma_convert_exact, lemma_group_exact, lemma_realign, lemma_round_rel, lemma_term_rel,
                     check_table9, prove_late_c, prove_lemmas, round_key, summands, table9_models, tr_alpha, tr_geometry)
from .report import bound_text, lemma_table
from .tasks import LemmaPlan, lemma_batch_task, lemma_plan, lemma_task

__all__ = ["BoundFormula", "BoundResult", "LemmaPlan", "LemmaResult", "TABLE9_OPS", "TR_OPS", "beta_for", "bound_text",
           "by_signature", "e_range", "floor_log2", "half_model", "ite_signed", "ite_signed_bits", "lemma_convert_exact",
           "lemma_batch_task", "lemma_group_exact", "lemma_plan", "lemma_realign", "lemma_round_rel", "lemma_table", "lemma_task", "lemma_term_rel", "prove_all",
           "prove_bound", "check_table9", "prove_late_c", "prove_lemmas", "recheck", "round_key", "signature", "summands", "table9_models",
           "tfdpa_models", "tightest", "tr_alpha", "tr_geometry", "twin_refute", "ulp_of", "value_of"]
