"""The Agent-World environment taxonomy and an offline classifier for it.

Three levels: 20 first-level (L1) domains, functional groups inside each (L2), and a label per
environment (L3, e.g. ``"Petstore: pets"``). An environment's ``taxonomy`` is stored as::

    {"l1": "L1-04 Finance & Markets", "l2": "Banking & Payments", "l3": "Stripe: charges"}

so that both the code and the name can be searched (``agentworld list --category finance``).

Classification reads the environment's own title, description, tags and operation summaries.
Directory labels (the APIs.guru ``x-apisguru-categories``) are set per provider and often
wrong for one service, so they are not used. :class:`KeywordClassifier` is the offline
default: every L2 group is a short keyword document; the environment text and the groups
are TF-IDF vectors over that vocabulary and the most similar group wins (its L1 follows).
It is deterministic, needs only numpy, and an LLM can replace it (:func:`classify_with_llm`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

L1_CATEGORIES: dict[str, str] = {
    "L1-01": "Search & Information Retrieval",
    "L1-02": "Academic & Scientific Research",
    "L1-03": "Social Media & Community",
    "L1-04": "Finance & Markets",
    "L1-05": "Cryptocurrency & Web3",
    "L1-06": "Weather & Geospatial",
    "L1-07": "Software Development",
    "L1-08": "System & Cloud Infrastructure",
    "L1-09": "Browser Automation & Testing",
    "L1-10": "Data Storage & Databases",
    "L1-11": "AI & Machine Learning",
    "L1-12": "Reasoning & Decision Support",
    "L1-13": "Mathematics & Computation",
    "L1-14": "Media & Entertainment",
    "L1-15": "Healthcare & Life Sciences",
    "L1-16": "Travel & Transportation",
    "L1-17": "Document & Design",
    "L1-18": "News & Trends",
    "L1-19": "Cybersecurity & Network Analysis",
    "L1-20": "Communication & General Utilities",
}
"""L1 code -> name, in the order of the Agent-World paper."""

L2_GROUPS: dict[str, dict[str, str]] = {
    "L1-01": {
        "Web & Site Search": "search engine web serp results ranking autocomplete "
        "suggestion crawl index site keyword",
        "Knowledge Bases & Encyclopedias": "wiki wikipedia wikidata encyclopedia knowledge "
        "graph entity fact trivia dictionary definition thesaurus word lexical",
        "Open Data & Public Records": "open data government public record census dataset "
        "registry statistics agency portal citizen municipal gov aadhaar certificate",
        "Directories & Lookup": "directory lookup yellow pages business listing company "
        "registry companies enrichment firmographic person lookup",
    },
    "L1-02": {
        "Scholarly Literature": "paper publication journal citation doi scholar scholarly "
        "research academic preprint literature arxiv pubmed bibliographic",
        "Scientific Data": "science scientific experiment observation astronomy space nasa "
        "planet satellite chemistry physics specimen biodiversity species taxonomy",
        "Education & Learning": "education course student school learning teacher university "
        "classroom lesson quiz exam curriculum enrollment grade assignment lms",
        "Cultural Heritage": "museum artwork heritage archive artifact gallery history "
        "exhibition cultural collection object",
    },
    "L1-03": {
        "Social Networks & Posts": "social network tweet twitter facebook instagram follower "
        "timeline feed post hashtag mastodon toot",
        "Forums & Q&A": "forum question answer discussion thread community topic vote reply "
        "stackoverflow subreddit",
        "Reviews & Ratings": "review rating star testimonial opinion reputation yelp",
        "Groups & Events": "meetup attendee rsvp club volunteer community member event ticketing",
    },
    "L1-04": {
        "Market Data & Quotes": "stock market quote ticker forex trading equity fund "
        "portfolio investment securities brokerage options dividend",
        "Banking & Payments": "bank banking payment transfer card transaction charge refund "
        "payout merchant iban balance checkout acquiring psd2 direct debit",
        "Accounting & Invoicing": "accounting invoice ledger expense tax bookkeeping receipt "
        "bill journal payable receivable vat payroll subscription billing",
        "Commerce & Retail": "ecommerce shop store product order cart catalog inventory sku "
        "fulfillment marketplace promotion coupon seller retail pricing",
        "Insurance & Lending": "insurance policy claim loan credit lending mortgage premium "
        "underwriting",
    },
    "L1-05": {
        "Crypto Market Data": "crypto cryptocurrency bitcoin ethereum coin altcoin exchange "
        "market cap defi price",
        "Blockchain & Nodes": "blockchain ledger explorer hash smart contract gas mining "
        "ethereum bitcoin solana polygon tron node",
        "Wallets & DeFi": "wallet defi nft web3 dapp staking swap liquidity mint crypto",
    },
    "L1-06": {
        "Weather & Climate": "weather forecast temperature rain wind climate storm "
        "precipitation humidity meteorology",
        "Maps & Geocoding": "map geocode geocoding location place address coordinate latitude "
        "longitude geolocation postcode routing elevation",
        "Environment & Air Quality": "air quality pollution environment emission carbon water "
        "energy solar ecology ozone",
        "Earth Observation & GIS": "gis geospatial satellite imagery terrain tile spatial "
        "boundary geometry raster",
    },
    "L1-07": {
        "Source Control & CI/CD": "git repository commit branch pull request merge build "
        "pipeline ci cd deploy release workflow artifact",
        "Issue & Project Tracking": "issue ticket bug project task sprint milestone board "
        "backlog tracker kanban",
        "Developer Platforms & APIs": "developer sdk api gateway webhook app integration "
        "plugin extension feature flag",
        "Packages & Code Quality": "package library dependency npm code lint analysis "
        "coverage snippet review compiler",
    },
    "L1-08": {
        "Compute & Containers": "compute virtual machine vm instance container kubernetes "
        "cluster server serverless autoscaling batch hpc",
        "Networking & Delivery": "network dns cdn load balancer firewall vpn subnet vnet "
        "peering traffic gateway interconnect",
        "Monitoring & Operations": "monitor monitoring metric log logging alert alerting "
        "incident uptime telemetry trace diagnostic runbook observability",
        "Cloud Management & Billing": "cloud resource subscription quota region tenant "
        "provisioning deployment management azure aws",
        "Devices & IoT": "iot device sensor hub firmware edge smart home thing",
    },
    "L1-09": {
        "Web Scraping & Crawling": "scrape scraping scraper crawler crawl extract html "
        "webpage proxy parse",
        "Screenshots & Rendering": "screenshot render headless browser capture webpage "
        "chrome puppeteer viewport",
        "Testing & QA": "test testing qa automation selenium load testing mock assertion "
        "lab device farm",
    },
    "L1-10": {
        "Databases & Queries": "database sql query table row column nosql schema cosmos "
        "postgres mysql mongodb dynamodb redis",
        "Files & Object Storage": "file storage bucket object upload download folder drive "
        "blob backup sync share",
        "Data Pipelines & Warehouses": "data pipeline etl warehouse dataset stream ingest "
        "lake catalog glue bigquery",
    },
    "L1-11": {
        "Language & NLP": "nlp language text sentiment entity extraction classification "
        "summarization chatbot translation llm",
        "Vision & Speech": "vision image recognition face detection ocr speech voice "
        "transcription tts",
        "ML Platforms & Models": "machine learning ml model training prediction inference "
        "ai neural deployment",
    },
    "L1-12": {
        "Analytics & Business Intelligence": "analytics report dashboard insight kpi "
        "segment funnel conversion bi",
        "Recommendation & Personalisation": "recommendation personalization recommend "
        "preference ranking relevance",
        "Planning & Optimisation": "optimization optimize planning scheduler decision rule "
        "solver constraint",
        "Risk & Scoring": "risk score scoring fraud credit assessment kyc aml compliance "
        "verification",
    },
    "L1-13": {
        "Math & Numbers": "math mathematics number calculate calculator equation formula "
        "arithmetic prime",
        "Conversion & Units": "convert conversion unit currency rate exchange measurement",
        "Random & Generators": "random generator generate fake sample lorem uuid password dice",
        "Dates & Time": "date time timezone calendar holiday clock",
    },
    "L1-14": {
        "Music & Audio": "music song artist album track playlist audio podcast radio lyrics",
        "Video & Film": "video movie film tv show episode series streaming channel cinema",
        "Games & Sports": "game sport team player match league score fantasy tournament "
        "season esports",
        "Books & Comics": "book comic novel reading isbn author",
        "Images & Photos": "image photo picture gif wallpaper illustration stock",
    },
    "L1-15": {
        "Clinical & Health Records": "health patient clinical doctor hospital medical "
        "practitioner ehr fhir care",
        "Genomics & Bioinformatics": "gene genome protein sequence dna biology bioinformatics "
        "molecule",
        "Drugs & Pharma": "drug medication pharmacy prescription pharma chemical compound",
        "Fitness & Nutrition": "fitness nutrition food recipe diet calorie exercise workout "
        "wellness",
    },
    "L1-16": {
        "Flights & Airlines": "flight airline airport seat fare aviation aircraft",
        "Hotels & Accommodation": "hotel accommodation room stay reservation rental lodging",
        "Transit & Rail": "transit bus train rail station stop departure arrival timetable metro",
        "Vehicles, Shipping & Logistics": "vehicle car fleet parking shipping shipment "
        "tracking parcel delivery logistics freight carrier",
        "Trips & Tourism": "travel trip tour tourism destination itinerary attraction",
    },
    "L1-17": {
        "Documents & PDF": "document pdf template docx word render convert",
        "Signatures & Forms": "signature sign esign form survey envelope submission",
        "Design & Graphics": "design graphic edit color font icon logo canvas presentation",
        "Notes & Workspaces": "note workspace wiki knowledge content cms site blog page",
    },
    "L1-18": {
        "News Articles & Feeds": "news article headline feed rss publisher journalism story",
        "Trends & Media Monitoring": "trend trending mention monitoring brand listening popularity",
        "Politics & Government News": "parliament legislation bill vote politics election "
        "government committee debate",
    },
    "L1-19": {
        "Threat Intelligence": "threat malware virus phishing intelligence ioc attack abuse "
        "blacklist spam",
        "Vulnerability & Compliance": "vulnerability scan security cve compliance audit "
        "patch posture finding",
        "Network Analysis": "ip whois dns domain port traceroute ping ssl certificate network",
        "Identity & Access": "identity authentication authorization oauth sso saml mfa iam "
        "credential login password secret vault directory",
    },
    "L1-20": {
        "Email": "email mail inbox smtp mailbox newsletter bounce",
        "SMS & Voice": "sms text message phone call voice telephony otp fax",
        "Chat & Collaboration": "chat channel conversation team collaboration meeting "
        "conference messaging",
        "Calendars & Scheduling": "calendar schedule booking appointment availability reminder",
        "CRM & Marketing": "crm contact lead deal customer marketing campaign audience "
        "subscriber sales advertising",
        "Workplace & HR": "employee hr recruiting job candidate payroll timesheet workforce",
        "General Utilities": "utility tool validate validation qr code url shortener "
        "barcode format",
    },
}
"""L1 code -> {L2 name: keyword document}; the keywords are the offline model's features."""

DEFAULT_L2 = ("L1-20", "General Utilities")
"""Where an environment with no keyword evidence at all goes."""

_STOP = frozenset(
    "a an and the of to for in on by with from at as is are be this that api apis service "
    "services data v1 v2 v3 get list create update delete set use using your you it its can "
    "will or not all new via about more which post put patch retrieve return returns "
    "specified given id ids name".split()
)
_TOKEN = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|\d+")


def l1_label(code: str) -> str:
    """``"L1-04"`` -> ``"L1-04 Finance & Markets"`` (the form stored in ``taxonomy.l1``)."""
    return f"{code} {L1_CATEGORIES[code]}"


def tokenize(text: str) -> list[str]:
    """Lower-case word stems: camelCase is split, stop words dropped, plurals folded."""
    out = []
    for word in _TOKEN.findall(text):
        word = word.lower()
        if len(word) < 2 or word in _STOP or word.isdigit():
            continue
        if word.endswith("ies") and len(word) > 4:
            word = word[:-3] + "y"
        elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
            word = word[:-1]
        out.append(word)
    return out


@dataclass(frozen=True)
class Classification:
    """Where an environment sits: L1 code, L2 group, L3 label, and the winning similarity."""

    l1: str
    l2: str
    l3: str
    score: float = 0.0
    method: str = "keywords"

    def to_taxonomy(self) -> dict[str, str]:
        return {"l1": l1_label(self.l1), "l2": self.l2, "l3": self.l3}


class KeywordClassifier:
    """TF-IDF nearest keyword document over the L2 groups (numpy only, deterministic).

    >>> clf = KeywordClassifier()
    >>> clf.classify({"title": "Weather forecast API", "description": "rain and wind"}).l1
    'L1-06'
    """

    FIELD_WEIGHTS = {
        "title": 3.0,
        "name": 3.0,
        "group": 2.0,
        "tags": 1.0,
        "description": 1.5,
        "operations": 0.3,
        "collections": 0.5,
    }
    """How much each text field counts: names say more than long prose."""

    def __init__(self) -> None:
        self.groups: list[tuple[str, str]] = [
            (code, name) for code, groups in L2_GROUPS.items() for name in groups
        ]
        docs = [tokenize(f"{name} {L2_GROUPS[code][name]}") for code, name in self.groups]
        self.vocab = {w: i for i, w in enumerate(sorted({w for d in docs for w in d}))}
        df = Counter(w for d in docs for w in set(d))
        n = len(docs)
        self.idf = np.array(
            [math.log((1 + n) / (1 + df[w])) + 1.0 for w in sorted(self.vocab)], dtype=np.float64
        )
        mat = np.zeros((n, len(self.vocab)))
        for row, doc in enumerate(docs):
            for word, count in Counter(doc).items():
                mat[row, self.vocab[word]] = 1.0 + math.log(count)
        mat *= self.idf
        self.prototypes = mat / np.linalg.norm(mat, axis=1, keepdims=True)

    def vector(self, fields: dict[str, Any]) -> np.ndarray:
        counts: Counter[str] = Counter()
        for key, weight in self.FIELD_WEIGHTS.items():
            value = fields.get(key) or ""
            text = " ".join(value) if isinstance(value, list | tuple) else str(value)
            for word in tokenize(text):
                if word in self.vocab:
                    counts[word] += weight
        vec = np.zeros(len(self.vocab))
        for word, count in counts.items():
            vec[self.vocab[word]] = 1.0 + math.log(count) if count >= 1 else count
        vec *= self.idf
        norm = np.linalg.norm(vec)
        return vec / norm if norm > 0 else vec

    def scores(self, fields: dict[str, Any]) -> np.ndarray:
        """Cosine similarity to every L2 group, in ``self.groups`` order."""
        return self.prototypes @ self.vector(fields)

    def classify(self, fields: dict[str, Any]) -> Classification:
        """Classify from text fields: ``title``, ``name``, ``group``, ``description``,
        ``tags``, ``operations``, ``collections`` (strings or lists of strings)."""
        sims = self.scores(fields)
        best = int(np.argmax(sims))  # first maximum: ties resolve in taxonomy order
        code, name = self.groups[best] if sims[best] > 0 else DEFAULT_L2
        return Classification(code, name, l3_label(fields), float(sims[best]))


def l3_label(fields: dict[str, Any]) -> str:
    """The per-environment level: its title, plus the slice of the API it covers."""
    title = str(fields.get("title") or fields.get("name") or "").strip()
    group = str(fields.get("group") or "").strip()
    label = f"{title}: {group}" if group and group.casefold() not in title.casefold() else title
    return label[:80]


def parse_llm_choice(text: str) -> tuple[str, str] | None:
    """``(L1 code, L2 name)`` from a reply that names an L1 code and, ideally, an L2 group."""
    match = re.search(r"L1-(\d\d)", text)
    if not match or f"L1-{match.group(1)}" not in L1_CATEGORIES:
        return None
    code = f"L1-{match.group(1)}"
    folded = text.casefold()
    for name in L2_GROUPS[code]:
        if name.casefold() in folded:
            return code, name
    return code, next(iter(L2_GROUPS[code]))


def classify_with_llm(backend: Any, fields: dict[str, Any], fallback: KeywordClassifier):
    """Ask an LLM backend (``chat(messages) -> message``) to pick the L1/L2 group.

    An unusable reply falls back to the keyword model, so a flaky endpoint never leaves an
    environment unclassified.
    """
    menu = "\n".join(
        f"{code} {L1_CATEGORIES[code]}: {'; '.join(groups)}" for code, groups in L2_GROUPS.items()
    )
    about = "\n".join(
        f"{k}: {v if isinstance(v, str) else ', '.join(map(str, v))[:600]}"
        for k, v in fields.items()
        if v
    )
    prompt = (
        "Classify this tool environment into exactly one category. Categories (L1 code, "
        f"name: its L2 groups):\n{menu}\n\nEnvironment:\n{about}\n\n"
        "Answer with one line: '<L1 code> | <L2 group name>'."
    )
    reply = backend.chat([{"role": "user", "content": prompt}], temperature=0.0)
    choice = parse_llm_choice(str(reply.get("content") or ""))
    if choice is None:
        return fallback.classify(fields)
    return Classification(choice[0], choice[1], l3_label(fields), 1.0, "llm")
