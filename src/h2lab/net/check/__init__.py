"""``h2lab net check``: measure the emulated link and compare it with what was asked.

Every probe runs between the lab's own namespaces: sockets are created by threads that entered
the client or servers namespace (:func:`h2lab.net.netns.run_in_netns`) and then used from
ordinary threads. Rows are ``CheckRow(metric, direction, asked, measured, unit, tolerance,
passed)``; ``passed`` is ``None`` for rows that are reported, not judged. Three modules: the
probes (:mod:`.probes`, the traffic), the estimators (:mod:`.estimators`, pure: what is
expected, and estimates from samples) and the judging (:mod:`.judge`, the rows).

What is measured, and how:

* ``rtt``: TCP SYN -> RST round trips to a closed port, one warm-up, then N samples; judged on
  the 20% trimmed mean (with ``--quick``'s 10 samples, two scheduling hiccups of the 2-core VM
  cannot move it: one of 9 ms moved a 10% trimmed mean by 0.9 ms), tolerance max(0.5 ms, 1%).
* ``goodput``: one TCP bulk flow per direction for a few seconds; goodput over the last 60% of
  it, against rate x 1448/1500 (TCP payload per IP packet with timestamps); +-3%. Judged only
  on a loss-free link (with loss, TCP's own reaction sets the goodput).
* ``loss``: sequence-numbered UDP datagrams, paced well below the rate; the count lost must lie
  in the 99% binomial interval of the asked ratio (exactly 0 when no loss is asked).
* ``queueing_delay``: RTT probes while a downlink bulk flow fills the queue, minus the idle RTT;
  a droptail queue cannot hold more than limit/rate, CoDel aims at its target.
* ``emulator_drops`` (static profiles): packets Rattan's sockets dropped because they were
  full, over the whole check (none asked for, so it must be 0).
* dynamic (cellular) profiles: a downlink UDP flood above the trace's peak for one trace period;
  delivered bytes per 70 ms step against the trace (Pearson correlation, median absolute
  error), and loss episodes seen by an uplink probe against the schedule.
"""

from h2lab.net.check.judge import CheckRow, check, check_static

__all__ = ["CheckRow", "check", "check_static"]
