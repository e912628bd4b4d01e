"""mvpo_train.study.repair_magnitude: the repair read back from real batch records is MVPO's
advantage minus GiGPO's, non-zero only on rows MVPO routed."""

from __future__ import annotations

import numpy as np
import pytest

from mvpo_train.credit import get_estimator
from mvpo_train.records import write_batch_record
from mvpo_train.study.repair_magnitude import RecordsError, repair_magnitude
from mvpo_train.study.synthetic import synthetic_batch


def test_the_repair_is_mvpos_advantage_minus_gigpos_on_the_routed_rows(tmp_path):
    shares, routed = [], []
    for it in (1, 2):
        batch = synthetic_batch(4, seed=it)
        mvpo = get_estimator("mvpo")
        adv, diag = mvpo(batch)
        write_batch_record(tmp_path, it, batch, estimator=mvpo, advantages=adv, diagnostics=diag)
        repair = np.asarray(adv, np.float64) - np.asarray(get_estimator("gigpo")(batch)[0])
        shares.append((repair**2).sum() / (np.asarray(adv, np.float64) ** 2).sum())
        routed.append(diag["repaired_ratio"])
    got = repair_magnitude(tmp_path)
    assert got["records"] == 2
    assert 0 < got["changed"] <= np.mean(routed)  # only MVPO's routed rows change
    assert 0 < got["repair_share"] < 1
    assert got["repair_share"] == pytest.approx(np.mean(shares))
    assert got["repair_sd"] > 0 and got["gigpo_sd"] > 0


def test_a_run_without_mvpo_records_is_one_error(tmp_path):
    batch = synthetic_batch(2, seed=0)
    gigpo = get_estimator("gigpo")
    adv, diag = gigpo(batch)
    write_batch_record(tmp_path, 1, batch, estimator=gigpo, advantages=adv, diagnostics=diag)
    with pytest.raises(RecordsError, match="no batch record of an MVPO run"):
        repair_magnitude(tmp_path)
