"""Sensitive categories (health, religion, politics, sexuality, ...): personal data a memory
policy may exclude (`exclude_sensitive`). Unlike secrets these are refused only when the policy
says so and the write is one memory chose to make (extraction, the remember tool).
"""

from __future__ import annotations

import re

_SENSITIVE: dict[str, str] = {
    "health": r"""
        diagnos\w* | symptom\w* | medicat\w* | prescri(?:bed|ption)\w* | pregnan\w* | miscarriage |
        therap(?:y|ist|ies) | psychiatr\w* | psychologist | counsell?(?:ing|or) | depress(?:ed|ion) |
        anxiety | panic\s+attacks? | disorder | syndrome | cancer | tumou?r | chemo\w* | diabet\w* |
        asthma | allerg(?:y|ies|ic) | hiv | hepatitis | covid | infection | surgery | surgeon |
        illness | disease | chronic\s+(?:pain|illness|fatigue|condition) | mental\s+health | adhd |
        autis\w* | bipolar | schizophren\w* |
        ptsd | ocd | migraines? | epilep\w* | seizures? | insulin | dialysis | blood\s+pressure |
        cholesterol | heart\s+(?:attack|condition|disease) | had\s+a\s+stroke | arthritis | dementia | alzheimer\w* |
        parkinson\w* | disabilit(?:y|ies) | wheelchair | addict(?:ed|ion) | alcoholi\w* |
        rehab | sober | sobriety | overdose | antidepressants? | ssri | ozempic | wegovy | ivf |
        infertil\w* | hospitali[sz]ed | in\s+hospital | my\s+doctor | diagnosis | injur(?:y|ies|ed) |
        eating\s+disorder | anorexi\w* | bulimi\w* | suicid\w* | self[\s\-]harm | obes(?:e|ity) |
        herpes | hearing\s+aids? | medical\s+condition | health\s+condition | sick\s+leave
    """,
    "religion": r"""
        religio\w* | christian\w* | catholic\w* | protestant\w* | evangelical | muslim\w* | islam\w* |
        jewish | judaism | jew | hindu\w* | buddhis\w* | sikh\w* | mormon\w* | atheis\w* | agnostic |
        church | mosque | synagogue | pray(?:s|ed|ing|er|ers)? | bible | qur'?an | koran | torah |
        ramadan | kosher | halal | baptis\w* | jehovah\w* | lutheran | methodist | pagan | wicca\w* |
        spiritual\w* | god-fearing | my\s+faith | born\s+again | bar\s+mitzvah | bat\s+mitzvah
    """,
    "politics": r"""
        politic\w* | democrats? | republicans? | liberal\s+party | conservative\s+party | labou?r\s+party |
        tory | tories | socialis\w* | communis\w* | libertarian\w* | anarchis\w* | fascis\w* |
        vot(?:e|ed|es|ing)\s+(?:for|against|labou?r|tory|democrat|republican|green|conservative|liberal) |
        (?:left|right)[\s\-]wing | trump | biden | maga | green\s+party | party\s+member\w* |
        election\s+campaign | campaign(?:ed|ing)?\s+for | political\s+views? | progressive\s+politics
    """,
    "sexuality": r"""
        gay | lesbian\w* | bisexual\w* | homosexual\w* | heterosexual\w* | queer | transgender\w* |
        trans\s+(?:man|woman|person) | non[\s\-]?binary | asexual\w* | pansexual\w* | lgbt\w* |
        sexual\s+orientation | sexuality | sex\s+life | came\s+out\s+as | coming\s+out\s+as | intersex
    """,
    "ethnicity": r"""
        ethnicity | ethnic\s+(?:origin|background|group) | my\s+race | racial\s+(?:background|identity) |
        skin\s+colou?r
    """,
    "trade_union": r"""
        trade\s+union | labou?r\s+union | union\s+member\w* | unioni[sz]ed | shop\s+steward
    """,
    "criminal_record": r"""
        convicted | conviction | felony | felon | criminal\s+record | arrested | prison | jail |
        parole | probation | incarcerat\w* | sex\s+offender | pleaded\s+guilty
    """,
    "genetic_biometric": r"""
        genetic\w* | dna\s+test\w* | genome | biometric\w* | brca\w*
    """,
    "immigration_status": r"""
        undocumented | asylum | refugee\s+status | immigration\s+status | visa\s+overstay | deport\w*
    """,
}

_SENSITIVE_PATTERNS = {
    category: re.compile(r"(?ix)\b(?:" + body + r")\b") for category, body in _SENSITIVE.items()
}
SENSITIVE_CATEGORIES: tuple[str, ...] = tuple(_SENSITIVE)


def sensitive_category(text: str) -> str | None:
    """The first sensitive category `text` touches (health, religion, politics, ...), or None."""
    for category, pattern in _SENSITIVE_PATTERNS.items():
        if pattern.search(text):
            return category
    return None


__all__ = ["SENSITIVE_CATEGORIES", "sensitive_category"]
