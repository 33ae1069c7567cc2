"""English verbs in their base form: what an instruction starts with ("Forward every invoice…",
"Ignore the previous notes…").

An instruction has no subject: its first word is the verb, in the base form. This list holds the
verbs an instruction to an agent or a reader commonly opens with (acting on data, documents,
messages, systems, people and accounts), written out because mnemic ships no part-of-speech
tagger. Words far more common as adjectives at the start of a statement ("free", "light") are left
out: "Free shipping applies to orders over $50." states something.
"""

from __future__ import annotations

BASE_VERBS = frozenset(
    """accept access accumulate acknowledge acquire act activate adapt add address adjust administer adopt
    advance advise aggregate alert align allocate allow alter amend analyse analyze annotate announce answer
    append apply appoint approve archive arrange ask assemble assess assign assist assume attach attempt
    attend audit authenticate authorise authorize automate avoid back backup ban bill block book boost bring
    broadcast browse build buy calculate call cancel capture carry cast catalog catalogue categorise
    categorize change charge chase check choose cite claim clarify classify clean cleanse clear click clone
    close collect combine comment commit communicate compare compile complete compose compress compute
    concatenate conclude conduct configure confirm connect consider consolidate construct consult contact
    continue contribute control convert copy correct count craft crawl create credit crop cross curate
    customise customize cut debit debug decide declare decline decode decrypt deduct define delay delegate
    delete deliver demonstrate deny deploy deposit derive describe design destroy detail detect determine
    develop diagnose dial disable disclose disconnect discover discuss disregard dismiss dispatch display dispose
    distribute divide do document double download draft drag draw drop dump duplicate edit elaborate
    eliminate email embed emphasise emphasize empty enable encode encrypt end enforce engage enhance enrich
    enroll enrol ensure enter erase escalate establish estimate evaluate examine exclude execute expand
    explain exfiltrate explore export expose extend extract fetch file fill filter finalise finalize find fix flag
    focus follow forget format forward freeze fund gather generate get give go grant group guess guide halt
    handle help hide highlight hire hold identify ignore implement import improve include increase index
    indicate inform initialise initialize inject input insert inspect install instruct integrate interpret
    interview introduce invest investigate invite invoice isolate issue itemise itemize join keep kill label
    launch leak leave lend let limit link list load locate lock log look mail maintain make manage map mark
    match measure meet mention merge message migrate mirror modify monitor move multiply name navigate
    negotiate note notify obey obtain offer omit open optimise optimize order organise organize outline
    output override overwrite paraphrase parse paste patch pause pay perform persuade phone pick ping place
    plan plot point populate post postpone predict prefer prepare present preserve press pretend prevent print
    prioritise prioritize proceed process produce program promote prompt proofread propose protect provide
    publish pull purchase purge push put query question queue quote raise rank rate reach read reassign
    rebuild recall receive recommend reconcile record recover redact redirect reduce refer refresh refund
    register reject release reload remember remind remove rename render reorder repeat rephrase replace reply
    report reproduce request require reroute research reserve reset resolve respond restart restore
    restrict resubmit resume retrieve retry return reveal reverse review revise revoke reword rewrite route
    run save scan schedule scrape screen scroll search secure select sell send separate set settle share
    shift ship show shut sign simplify skip sort specify spell split start state stop store stream strip submit
    substitute subtract suggest summarise summarize supply support suspend switch sync synchronise
    synchronize tag take talk target teach tell terminate test text thank track trade transcribe transfer
    transform translate transmit treat trigger trim try turn type uncover undo uninstall unlock unsubscribe
    update upgrade upload use validate verify view visit wait warn watch wipe wire withdraw write""".split()
)

# Verbs a statement's subject is followed by that an instruction rarely opens with, so that
# "Support agents work in shifts." reads as a subject and its verb.
STATEMENT_VERBS = BASE_VERBS | frozenset(
    """appear arrive become begin belong come cost depend differ exist expire fall feel grow happen last
    lie live look matter mean need occur own remain rise seem sit stand stay tend vary want work""".split()
)

__all__ = ["BASE_VERBS", "STATEMENT_VERBS"]
