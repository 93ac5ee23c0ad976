"""Field-aware values: one realistic value for a (field name, JSON Schema, owning noun).

Seed records (:class:`~agentworld_gym.synthesis.envs.seed.Generator`), task write values
(:mod:`agentworld_gym.synthesis.tasks.values`) and the in-place reseed of existing worlds
(:mod:`agentworld_gym.synthesis.envs.reseed`) all draw from :class:`FieldValues`, so a
``last_name`` is a surname, a ``max_staleness`` a duration and a ``webhook`` an https URL
wherever the value comes from.

The schema speaks first (``enum``, ``example``, ``format``, ``pattern``, length bounds), then
the field's name picks a *kind* (:func:`kind_of`), and the kind's generator draws from pools
built once per process from Faker plus small curated lists. Every draw goes through the
caller's :class:`random.Random`, never Faker's or the global state, so one seed gives the
same bytes in any process, and a draw costs a few ``rng.choice`` calls rather than a Faker
template expansion.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import re
import string
from typing import Any

__all__ = [
    "FieldValues",
    "PERSON_NOUNS",
    "fold",
    "infra",
    "is_stock_slug",
    "is_junk",
    "is_placeholder",
    "is_sentinel",
    "kind_of",
    "looks_like",
    "words_of",
]

PERSON_NOUNS = frozenset(
    "user users customer customers contact contacts member members employee employees person "
    "people author authors owner owners patient patients driver drivers player players agent "
    "agents candidate candidates student students teacher teachers account accounts subscriber "
    "subscribers recipient recipients sender senders assignee reviewer manager applicant "
    "guest guests attendee attendees participant participants profile profiles judge judges "
    "doctor doctors physician physicians nurse nurses lawyer lawyers attorney attorneys "
    "instructor instructors coach coaches therapist therapists technician technicians "
    "volunteer volunteers donor donors speaker speakers visitor visitors traveler travelers "
    "passenger passengers".split()
)
_EPOCH = dt.datetime(2023, 1, 1, tzinfo=dt.UTC)
_SPAN = 3 * 365 * 86400

# -- curated vocabularies --------------------------------------------------------------------
_TOPICS = (
    "billing payments checkout analytics reporting search inventory orders catalog auth "
    "identity messaging notifications support marketing payroll compliance logistics "
    "shipping data ml web mobile api platform storage backup monitoring security finance "
    "onboarding sales crm ledger pricing media"
).split()
_STAGES = ("prod", "staging", "dev", "test", "qa", "eu", "us", "west", "east")
_TEAMS = (
    "Platform",
    "Growth",
    "Payments",
    "Customer Success",
    "Data Engineering",
    "Security",
    "Mobile",
    "Infrastructure",
    "Design",
    "Finance",
    "Marketing",
    "Support",
    "Research",
    "Operations",
    "Sales",
    "Legal",
)
_TAGS = (
    "urgent billing marketing backend frontend internal beta priority finance onboarding "
    "security compliance customer vip archived draft featured seasonal wholesale retail "
    "enterprise trial partner quarterly weekly legacy migration mobile analytics support "
    "sales travel design research holiday premium"
).split()
_PRODUCT_ADJ = (
    "Classic Premium Compact Wireless Organic Deluxe Portable Smart Ultra Eco Pro Mini "
    "Stainless Bamboo Ergonomic Vintage Everyday Travel"
).split()
_PRODUCT_NOUN = (
    "Desk Lamp",
    "Backpack",
    "Coffee Grinder",
    "Running Shoes",
    "Water Bottle",
    "Headphones",
    "Notebook",
    "Yoga Mat",
    "Blender",
    "Office Chair",
    "Phone Case",
    "Wall Clock",
    "Rain Jacket",
    "Cutting Board",
    "Bluetooth Speaker",
    "Throw Blanket",
    "Standing Desk",
    "Tea Kettle",
    "Duffel Bag",
    "Monitor Stand",
    "Sunglasses",
    "Wool Socks",
    "Chef Knife",
    "Table Lamp",
)
_TITLES = (
    "Quarterly budget review",
    "Onboarding checklist for new hires",
    "Renewal terms for the annual plan",
    "Migrate reporting to the new warehouse",
    "Customer feedback summary",
    "Weekly sync notes",
    "Update the pricing page",
    "Holiday shipping schedule",
    "Security audit follow-up",
    "Invoice dispute resolution",
    "Launch plan for the spring release",
    "Fix login timeout on mobile",
    "Vendor contract renewal",
    "Team offsite agenda",
    "Refund policy update",
    "Data retention review",
    "Q3 marketing campaign",
    "Inventory count for the east warehouse",
    "Welcome to the team",
    "Your order has shipped",
    "Password reset requested",
    "Monthly usage report",
    "Action required: verify your email",
    "Draft proposal for the partnership",
    "Roadmap planning session",
    "Incident postmortem",
    "Annual compliance training",
    "Board meeting preparation",
    "Support ticket escalation",
    "Accessibility improvements",
)
_SENTENCES = (
    "Follow up with {first} about the renewal before {weekday}.",
    "Customer asked to move the delivery to {weekday} morning.",
    "Invoice was paid in full by {company}.",
    "Please review the attached proposal and share feedback by {weekday}.",
    "Shipped from the {city} warehouse with tracking included.",
    "{first} confirmed the meeting with the {team} team.",
    "Requested a callback regarding the latest statement.",
    "The account was upgraded to the annual plan.",
    "Waiting on approval from {first} {last} in finance.",
    "Replacement part ordered from {company}.",
    "Scheduled maintenance will take place this {weekday} night.",
    "Discussed pricing options and sent a revised quote.",
    "Card on file expired; the customer will update it.",
    "Handles regional sales for the {city} office.",
    "Weekly report for the {team} team.",
    "Ticket resolved after resetting the user's password.",
    "Imported from the legacy system during the migration.",
    "Temporary access granted for the audit period.",
    "Contract signed with {company} for the next year.",
    "Used for the {topic} integration in production.",
    "Needs a second review before it goes live.",
    "Prefers to be contacted by email after 5 pm.",
    "Delivery left at the front desk in {city}.",
    "Created automatically by the nightly sync job.",
    "Backup copy kept for compliance reasons.",
    "Trial extended by two weeks at {first}'s request.",
    "Price adjusted to match the current catalog.",
    "Awaiting signature from the {company} legal team.",
    "Monthly subscription for the {team} team.",
    "Primary contact for billing questions.",
)
_REASONS = (
    "Requested by the customer",
    "Duplicate entry",
    "Created by mistake",
    "No longer needed",
    "Replaced by a newer version",
    "Budget cut for this quarter",
    "Failed the security review",
    "Project was cancelled",
    "Moved to another vendor",
    "Expired and not renewed",
    "Requested by the account owner",
    "Out of stock",
    "Wrong address on file",
    "Customer changed their mind",
    "Policy violation",
)
"""Why something was cancelled, closed or changed: what a ``reason`` field holds."""
_QUERIES = (
    "red running shoes",
    "invoices march",
    "overdue payments",
    "wireless headphones",
    "project roadmap",
    "customer feedback",
    "annual report",
    "open tickets",
)
_ERRORS = (
    "Connection timed out after 30 seconds.",
    "The request was rejected because the token has expired.",
    "Insufficient permissions to access the resource.",
    "The upstream service returned an unexpected response.",
    "Quota exceeded for the current billing period.",
    "The file could not be parsed as valid JSON.",
    "The target resource was not found.",
    "Rate limit reached; retry after a short delay.",
)
_STATUSES = ("active", "pending", "completed", "inactive", "archived", "draft")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_REGIONS = (
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    "ca-central-1",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "eu-central-1",
    "eu-north-1",
    "ap-south-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-northeast-1",
    "ap-northeast-2",
    "sa-east-1",
)
_GCP_REGIONS = (
    "us-central1",
    "us-east1",
    "us-west1",
    "europe-west1",
    "europe-west4",
    "asia-east1",
    "asia-northeast1",
    "australia-southeast1",
)
_AZURE_REGIONS = (
    "eastus",
    "eastus2",
    "westus",
    "westus2",
    "westus3",
    "centralus",
    "northcentralus",
    "southcentralus",
    "canadacentral",
    "brazilsouth",
    "westeurope",
    "northeurope",
    "uksouth",
    "ukwest",
    "francecentral",
    "germanywestcentral",
    "swedencentral",
    "southeastasia",
    "eastasia",
    "japaneast",
    "australiaeast",
    "centralindia",
)
_LOCALES = ("en-US", "en-GB", "fr-FR", "de-DE", "es-ES", "ja-JP", "pt-BR", "it-IT", "nl-NL")
_LANGS = ("en", "fr", "de", "es", "ja", "pt", "it", "nl")
_DURATIONS = ("PT30S", "PT1M", "PT5M", "PT15M", "PT30M", "PT1H", "PT6H", "PT12H", "P1D", "P7D")
_SECONDS = (30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 86400)
_HTTP = ("GET", "POST", "PUT", "PATCH", "DELETE")
_PROTOCOLS = ("https", "http", "tcp", "udp", "grpc", "sftp")
_FORMATS = ("json", "csv", "pdf", "xml", "png", "xlsx")
_MIMES = ("application/json", "application/pdf", "text/csv", "image/png", "text/plain")
_PROVIDERS = ("AWS", "Google Cloud", "Azure", "Stripe", "Okta", "GitHub", "Twilio", "Salesforce")
_CHANNELS = ("email", "sms", "web", "push", "phone", "chat")
_SCOPES = ("read:users", "write:orders", "read:reports", "admin:billing", "read:invoices")
_SIZES = ("256 KB", "1.2 MB", "4.8 MB", "18 MB", "640 KB", "2.5 GB")
_GENERIC = (
    "Standard",
    "Primary",
    "Default",
    "Internal",
    "External",
    "Monthly",
    "Annual",
    "Regional",
    "Shared",
    "Personal",
)
_PURPOSES = (
    "Spring Launch",
    "Holiday Promo",
    "Customer Onboarding",
    "Partner Portal",
    "Churn Review",
    "Q3 Planning",
    "Q4 Forecast",
    "EMEA Expansion",
    "Fraud Checks",
    "Invoice Reminders",
    "Renewal Outreach",
    "Mobile Checkout",
    "Data Retention",
    "Vendor Payments",
    "Weekly Digest",
    "Support Escalations",
    "Trial Conversions",
    "Inventory Sync",
    "Order Tracking",
    "Returns Processing",
    "Payroll Run",
    "Tax Filing",
    "Security Audit",
    "Access Review",
    "Release Notes",
    "Beta Feedback",
    "Loyalty Program",
    "Referral Program",
    "Year-End Close",
    "Budget Planning",
    "Sales Pipeline",
    "Lead Scoring",
    "Newsletter Signups",
    "Product Tour",
    "Help Center",
    "Incident Response",
    "Disaster Recovery",
    "Log Archive",
    "Nightly Export",
    "Load Testing",
    "Search Ranking",
    "Demand Forecast",
    "Warehouse Transfers",
    "Shipping Rates",
    "Gift Cards",
    "Subscription Billing",
    "Chargeback Disputes",
    "KYC Review",
    "Compliance Reporting",
    "GDPR Requests",
    "Employee Onboarding",
    "Benefits Enrollment",
    "Hiring Pipeline",
    "Board Meeting",
    "Design Review",
    "Brand Refresh",
    "Website Redesign",
    "API Migration",
    "Cloud Migration",
    "Cost Review",
    "Uptime Checks",
    "Customer Surveys",
    "Win-back Campaign",
    "Black Friday",
    "Back to School",
    "Summer Sale",
    "Field Sales",
    "Key Accounts",
    "Partner Payouts",
    "Quarterly Close",
    "Price Changes",
    "Catalog Cleanup",
    "Store Openings",
    "Event Tickets",
    "Conference 2025",
    "Product Launch",
    "Vendor Onboarding",
    "Contract Renewals",
    "Expense Reports",
    "Travel Bookings",
    "Training Videos",
    "Customer Stories",
    "Feature Requests",
    "Bug Triage",
    "Release Train",
    "Mobile App",
    "Marketing Site",
    "Checkout Flow",
    "Signup Flow",
    "Password Resets",
    "Account Recovery",
    "Audit Trail",
    "Risk Scoring",
    "Claims Intake",
    "Appointment Reminders",
    "Patient Intake",
    "Course Enrollment",
    "Volunteer Shifts",
    "Donor Outreach",
    "Fleet Tracking",
    "Route Planning",
)
"""Names people give records of any kind: a purpose, not "<Topic> <the record's noun>"
(``Notifications Model``, ``Default Default``), which reads as filler wherever it appears."""
_NAMED_HEADS = frozenset(
    "project campaign report dashboard list segment board plan policy rule template workflow "
    "pipeline playlist channel room folder survey form program budget calendar schedule "
    "portfolio space workspace site page collection album course event meeting webinar "
    "checklist guide notebook".split()
)
"""Record nouns people often keep in a name ("Churn Review Dashboard", "Spring Launch Plan")."""
_TEAM_HEADS = frozenset("team group squad department unit org organization division".split())
_SLUG_PREFIX = {
    "resourcegroup": "rg",
    "workspace": "ws",
    "cluster": "aks",
    "vault": "kv",
    "storageaccount": "st",
    "server": "sql",
    "registry": "acr",
    "bucket": "s3",
    "factory": "adf",
    "namespace": "ns",
    "environment": "env",
}
_HEXMAP = "0123456789abcdef"
_TOKEN = string.ascii_letters + string.digits

# -- kinds -----------------------------------------------------------------------------------
STRUCTURED = frozenset(
    "datetime date time duration uuid email url image hostname ip secret etag phone "
    "countrycode currency version locale language timezone color ipath mime".split()
)
"""Kinds whose values have a recognisable shape (:func:`looks_like` checks it)."""

ALWAYS = frozenset("sentence error title product tag reason".split())
"""Kinds the old generator filled with word salad: a reseed redraws them whatever they hold."""


def fold(name: str) -> str:
    """``created_at`` / ``createdAt`` -> ``createdat``."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def words_of(name: str) -> list[str]:
    """``maxStaleness`` / ``max_staleness`` -> ``["max", "staleness"]``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", name))
    return [w for w in re.split(r"[^a-zA-Z0-9]+", spaced.lower()) if w]


_DATE_LAST = frozenset(
    "date at time timestamp datetime from until since expires expiry expiration start end "
    "deadline due created updated modified started finished completed closed birthday dob "
    "on ended began issued opened".split()
)
_DURATION_WORDS = frozenset(
    "staleness timeout interval ttl duration delay retention lifetime backoff cooldown maxage "
    "period timeoutseconds".split()
)
_SENTENCE_LAST = frozenset(
    "description summary notes note comment comments text body message content bio about "
    "details detail memo instructions purpose reason explanation remarks feedback caption "
    "errormessage statusmessage excerpt answer question plaintext html markdown".split()
)
_TITLE_LAST = frozenset("title subject headline heading topic".split())
_COMPANY_WORDS = frozenset(
    "company organization organisation org employer merchant vendor institution brand supplier "
    "bank manufacturer publisher carrier partner agency business firm issuer payee payer "
    "insurer lender retailer".split()
)
_PERSON_ROLES = frozenset(
    "owner author creator assignee manager reporter contact requester approver reviewer "
    "recipient sender customer user createdby updatedby modifiedby lastmodifiedby "
    "submittedby".split()
)


@functools.lru_cache(maxsize=8192)
def _kind(name: str, fmt: str, typ: str, noun: str) -> str:
    key = fold(name)
    words = words_of(name) or [key]
    last = words[-1]
    person = fold(noun) in PERSON_NOUNS or fold(noun).rstrip("s") in PERSON_NOUNS
    person = person or fold(noun) in _PERSON_ROLES
    if fmt in ("date-time", "datetime"):
        return "datetime"
    if fmt in ("date", "time", "email", "uuid", "hostname"):
        return fmt if fmt != "hostname" else "hostname"
    if fmt in ("uri", "url", "uri-reference", "iri"):
        return "url"
    if fmt in ("ipv4", "ipv6"):
        return "ip"
    if fmt == "password":
        return "secret"
    if fmt == "duration":
        return "duration"
    if key in ("etag", "odataetag") or last == "etag":
        return "etag"
    if key in ("uuid", "guid") or last in ("uuid", "guid"):
        return "uuid"
    if last in ("id", "ids", "uid", "sid", "arn", "gid", "ref", "oid") or key in ("key",):
        return "id"
    if "email" in key:
        return "email"
    if last in ("kind", "object", "type", "odatatype") and typ != "integer":
        return "discriminator"
    timed = any(w in _DURATION_WORDS and w != "period" for w in words)
    if (
        last in _DURATION_WORDS
        or (timed and last not in ("name", "id", "type", "unit", "mode", "policy"))
        or key.endswith(("expiresin", "maxage"))
    ):
        return "seconds" if typ in ("integer", "number") else "duration"
    if typ in ("integer", "number", "boolean"):
        return typ
    if key in ("next", "prev", "previous", "nextlink", "nextpage") or (
        key in ("self", "first", "last") and noun in ("links", "")
    ):
        return "url"
    if last in ("url", "uri", "link", "href", "website", "webhook", "callback", "homepage"):
        return "url"
    if last in ("endpoint", "redirect") or key.endswith(("callbackurl", "redirecturi", "self")):
        return "url"
    if last in ("avatar", "image", "icon", "logo", "photo", "picture", "thumbnail", "favicon"):
        return "image"
    if last in ("hostname", "domain", "host", "domainname") or key == "fqdn":
        return "hostname"
    if last == "ip" or key.endswith(("ipaddress", "ipaddr")) or key in ("ipv4", "ipv6"):
        return "ip"
    if last in ("secret", "token", "password", "passphrase", "apikey", "hash", "checksum"):
        return "secret"
    if last in ("signature", "salt", "nonce", "digest", "fingerprint", "key") or key in (
        "clientsecret",
        "accesskey",
        "privatekey",
    ):
        return "secret"
    if key in ("dateofbirth", "birthdate", "birthday", "dob"):
        return "birthdate"
    if last == "date" or (last in _DATE_LAST and not key.endswith(("by", "zone"))):
        return "date" if last == "date" and "time" not in key else "datetime"
    if key.endswith(("createdat", "updatedat", "timestamp", "datetime", "createtime")):
        return "datetime"
    if key in ("firstname", "givenname", "forename"):
        return "first_name"
    if key in ("lastname", "surname", "familyname"):
        return "last_name"
    if key in ("middlename", "additionalnames", "namemiddle", "namefirst"):
        return "first_name"
    if key in ("username", "login", "handle", "screenname", "nickname", "userlogin", "acct"):
        return "username"
    if key in ("fullname", "contactname", "personname", "customername", "ownername") or (
        key in _PERSON_ROLES
    ):
        return "full_name"
    if last == "name" and len(words) > 1 and words[-2] in _PERSON_ROLES:
        return "full_name"
    if key in ("namelast", "namefamily"):
        return "last_name"
    if last in ("hours", "minutes", "days", "spent", "count", "quantity", "qty", "percent"):
        return "count"
    if last in ("phone", "mobile", "fax", "msisdn", "telephone") or key.endswith("phonenumber"):
        return "phone"
    if any(w in _COMPANY_WORDS for w in words) and last in (*_COMPANY_WORDS, "name"):
        return "company"
    if last == "product" or key in ("productname", "itemname", "product"):
        return "product"
    if key in ("name", "displayname", "friendlyname", "shortname", "label", "display"):
        if fold(noun) in _COMPANY_WORDS:
            return "company"
        if fold(noun) in ("product", "products", "item", "items"):
            return "product"
        if person:
            return "full_name"
        return "label"
    if any(w in ("error", "failure", "fault") for w in words) and last in (
        "error",
        "message",
        "detail",
        "details",
        "reason",
        "description",
        "text",
    ):
        return "error"
    if last in _TITLE_LAST:
        return "title"
    if last in ("reason", "cause", "justification") or key in ("reasontext", "reasoncode"):
        return "reason"
    if last in _SENTENCE_LAST or key in _SENTENCE_LAST:
        return "sentence"
    if key in ("street", "address", "addressline1", "line1", "address1", "streetaddress"):
        return "street"
    if key in ("addressline2", "line2", "address2", "street2"):
        return "street2"
    if last == "city" or key in ("town", "locality"):
        return "city"
    if key.endswith("countrycode") or key in ("country", "countryiso"):
        return "countrycode" if key.endswith("code") or key == "country" else "country"
    if last == "country" or key.endswith("countryname"):
        return "country"
    if last in ("zip", "zipcode", "postalcode", "postcode") or key.endswith("postalcode"):
        return "postcode"
    if key in ("state", "province", "statecode") and person:
        return "state"
    if key in ("province", "statecode", "stateprovince"):
        return "state"
    if last in ("currency",) or key.endswith("currencycode"):
        return "currency"
    if last in ("amount", "price", "cost", "balance", "total", "subtotal", "fee"):
        return "money"
    if last in ("color", "colour"):
        return "color"
    if last in ("locale",):
        return "locale"
    if last in ("language", "lang") or key == "languagecode":
        return "language"
    if last in ("timezone", "tz") or key.endswith("timezone"):
        return "timezone"
    if last in ("version",) or key in ("apiversion", "semver"):
        return "version"
    if last in ("sku", "code", "symbol", "barcode", "reference"):
        return "code"
    if last in ("tag", "tags", "label", "labels", "category", "categories", "keyword", "keywords"):
        return "tag"
    if last == "status" or (key == "state" and not person):
        return "status"
    if last in ("region", "zone", "availabilityzone", "datacenter"):
        return "region"
    if last == "location":
        return "location"
    if key in ("resourcegroup", "resourcegroupname") or last in (
        "workspace",
        "cluster",
        "namespace",
        "project",
        "bucket",
        "vault",
        "registry",
        "environment",
        "service",
        "app",
        "slug",
        "repo",
        "repository",
        "instance",
        "server",
        "factory",
        "realm",
        "tenant",
    ):
        return "slug"
    if words[0] in ("workspace", "cluster", "namespace", "project", "bucket", "vault", "server"):
        return "slug" if last == "name" else "text"
    if key in ("resourcename", "appname", "servicename", "servername", "clustername"):
        return "slug"
    if key in ("job", "jobtitle", "occupation", "profession"):
        return "job"
    if last in ("team", "department", "group", "groups"):
        return "team"
    if last in ("method",):
        return "method"
    if last in ("protocol", "scheme"):
        return "protocol"
    if last in ("format", "extension"):
        return "format"
    if last in ("mimetype", "contenttype", "mediatype") or key.endswith("contenttype"):
        return "mime"
    if last in ("filename", "file") or (last == "name" and len(words) > 1 and words[-2] == "file"):
        return "filename"
    if last in ("path", "filepath", "directory", "folder"):
        return "ipath"
    if last in ("provider", "vendorname", "platformname"):
        return "provider"
    if last in ("channel",):
        return "channel"
    if last in ("scope", "scopes", "permission", "permissions"):
        return "scope"
    if last in ("query", "search", "q"):
        return "query"
    if last in ("size",):
        return "size"
    if last in ("number", "accountnumber", "iban") or key.endswith(("accountnumber", "number")):
        return "digits"
    if last == "name":
        return "full_name" if person else "label"
    return "text"


_INFRA = frozenset(
    "resourcegroup workspace cluster namespace vault storageaccount server registry bucket "
    "factory environment env project instance database db tenant realm site app application "
    "service deployment node pool network subnet gateway hub queue topic stream function "
    "repository repo pipeline stack domain zone container volume disk machine vm host".split()
)
_STOCK_SLUG = re.compile(rf"(?:[a-z0-9]{{2,3}}-)?(?:{'|'.join(_TOPICS)})-(?:{'|'.join(_STAGES)})")


_NOT_THINGS = frozenset(
    "get list create check update delete search post put set name names default defaults "
    "custom customs availability availabilities info details detail".split()
)
"""Words of an operation-made collection noun that name no thing (``get_countries``)."""


def infra(key: str, noun: str) -> bool:
    """Whether the record is infrastructure (a cluster, a namespace, a resource group, a
    service...), which people name by purpose and stage (``billing-prod``)."""
    words = {*words_of(singular(noun)), *words_of(key)}
    return any(w in _INFRA or singular(w) in _INFRA for w in words) or any(
        k in fold(key) for k in _SLUG_PREFIX
    )


def is_sentinel(value: Any) -> bool:
    """An enum's "not set" member (``STATE_UNSPECIFIED``): the API's default, which no user
    picks, writes or filters by."""
    return isinstance(value, str) and (value == "UNSPECIFIED" or value.endswith("_UNSPECIFIED"))


_STOCK_LABEL = re.compile(
    rf"(?:{'|'.join(sorted({*map(str.capitalize, _TOPICS), 'ML', 'API', 'CRM', *_GENERIC}))})"
    r"(?: (?:[A-Z][a-z]+|\d+)){1,3}"
)


def is_purpose(value: str) -> bool:
    """A display name :meth:`FieldValues.label` draws (``Churn Review``, ``Spring Launch Plan``):
    no name for a person."""
    return any(value == p or value.startswith(p + " ") for p in _PURPOSES)


def is_stock_label(value: str) -> bool:
    """``Notifications Model``, ``Default Default``: the "<Topic> <noun>" display names this
    module drew before :data:`_PURPOSES` (a reseed redraws them)."""
    if not _STOCK_LABEL.fullmatch(value) or value in _TEAMS:
        return False
    return not is_purpose(value)


def is_stock_slug(value: str) -> bool:
    """``billing-prod``, ``rg-auth-dev``: the purpose-stage shape this module draws for
    infrastructure (and drew, before it knew the record's kind, for users and templates)."""
    return bool(_STOCK_SLUG.fullmatch(value))


def number_range(name: str, schema: dict[str, Any]) -> tuple[float, float]:
    """Where a plausible value of the number field ``name`` lies (a year, an age, a rating
    1-5, a percent, a port, an amount), within the schema's own bounds."""
    key = fold(name)
    words = words_of(name) or [key]
    lo: float = 1
    hi: float = 1000
    if key.endswith("year"):
        lo, hi = 2000, 2026
    elif key.endswith("age"):
        lo, hi = 18, 90
    elif key.endswith(("latitude", "lat")):
        lo, hi = -60, 60
    elif key.endswith(("longitude", "lng", "lon", "long")):
        lo, hi = -150, 150
    elif any(w in _DURATION_WORDS for w in words):
        lo, hi = 30, 3600
    elif key.endswith(("percent", "percentage", "pct", "rate", "ratio")):
        lo, hi = (0, 100) if "percent" in key or "pct" in key else (0, 1)
    elif key.endswith(("rating", "stars", "score")):
        lo, hi = 1, 5
    elif key.endswith("port"):
        lo, hi = 1024, 9000
    elif key.endswith(("amount", "price", "cost", "balance", "fee", "subtotal", "total")):
        lo, hi = 5, 2500
    elif key.endswith(("count", "quantity", "qty", "number", "num", "size")):
        lo, hi = 0, 100
    mn, mx = schema.get("minimum"), schema.get("maximum")
    lo = mn if isinstance(mn, int | float) and not isinstance(mn, bool) else lo
    hi = mx if isinstance(mx, int | float) and not isinstance(mx, bool) else hi
    if isinstance(mn, int | float) and mx is None:
        hi = max(hi, lo + 1000)
    return lo, max(lo, hi)


def kind_of(name: str, schema: dict[str, Any] | None = None, noun: str = "") -> str:
    """The kind of value a field holds (``"last_name"``, ``"duration"``, ``"url"``...)."""
    schema = schema if isinstance(schema, dict) else {}
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), None)
    fmt = schema.get("format")
    return _kind(name, fmt if isinstance(fmt, str) else "", typ or "string", noun or "")


# -- shapes ----------------------------------------------------------------------------------
_PLACEHOLDER = re.compile(r"(?<![\w@./:+-])[A-Z][a-z]+ [a-z]+ \d{3}(?![\w@./:+-])")
_JUNK = (
    re.compile(r"^[A-Z][a-z]+ [A-Za-z]+-\d{2,3}$"),  # "Effort push-617"
    re.compile(r"^[a-zA-Z]+ [a-zA-Z]+$"),  # "federal her" (two bare words)
    re.compile(r"^[a-z]+ [a-z]+[0-9a-f]+$"),  # "product prevent9485e" (padded)
    re.compile(r"^[A-Z][a-z]+(?: [a-zA-Z]+){2,}\.?$"),  # Faker word salad
)
_SHAPES = {
    "datetime": re.compile(
        r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d\d:?\d\d)?$"
    ),
    "email": re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.I),
    "url": re.compile(r"^(https?|wss?|ftp|s3|gs)://\S+$|^/\S*$"),
    "uuid": re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I),
    "hostname": re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+$", re.I),
    "ip": re.compile(r"^[0-9.]+$|^[0-9a-f:]+$|^[0-9./]+$", re.I),
    "secret": re.compile(r"^\S{8,}$"),
    "etag": re.compile(r'^(W/)?"?[0-9a-zA-Z_:.+/=-]{6,}"?$'),
    "phone": re.compile(r"^\+?[0-9 ().-]{7,}$"),
    "countrycode": re.compile(r"^[A-Z]{2,3}$"),
    "currency": re.compile(r"^[A-Z]{3}$"),
    "version": re.compile(r"^v?\d+(\.\d+)*([-.+][0-9A-Za-z.]+)?$|^\d{4}-\d{2}-\d{2}"),
    "locale": re.compile(r"^[a-z]{2,3}([-_][A-Za-z]{2,4})?$"),
    "language": re.compile(r"^[a-z]{2,3}([-_][A-Za-z]{2,4})?$|^[A-Z][a-z]+$"),
    "timezone": re.compile(r"^[A-Za-z_]+/[A-Za-z_/+-]+$|^UTC|^GMT|^[A-Z]{3,4}$"),
    "color": re.compile(r"^#?[0-9a-fA-F]{3,8}$|^[a-z]+$|^[A-Z][a-z]+$"),
    "mime": re.compile(r"^[a-z]+/[a-z0-9.+-]+$"),
    "ipath": re.compile(r"^[/~.\w-][\w./~-]*$"),
    "duration": re.compile(
        r"^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$|^\d+(\.\d+)?\s*(ms|s|m|h|d)?$"
    ),
}
_SHAPES["date"] = _SHAPES["datetime"]
_SHAPES["birthdate"] = _SHAPES["datetime"]
_SHAPES["image"] = _SHAPES["url"]


def looks_like(kind: str, value: str) -> bool:
    """Whether ``value`` already has the shape of its kind (always true for free-text kinds)."""
    shape = _SHAPES.get(kind)
    return shape is None or bool(shape.match(value))


def is_placeholder(value: str) -> bool:
    """``Golden lagoon 951`` (the audit's shape) or ``Effort push-617``."""
    return bool(_PLACEHOLDER.search(value)) or bool(_JUNK[0].match(value))


@functools.lru_cache(maxsize=1)
def _slogan_words() -> tuple[frozenset[str], ...]:
    from faker.providers.company.en_US import Provider

    return tuple(frozenset(w.lower() for w in ws) for ws in Provider.catch_phrase_words)


def is_slogan(value: str) -> bool:
    """A Faker catch phrase (``Public-key national intranet``): read as word salad in any
    field."""
    parts = value.lower().split(" ", 2)
    return len(parts) == 3 and all(p in ws for p, ws in zip(parts, _slogan_words(), strict=True))


def is_junk(value: str) -> bool:
    """A filler the old generators made: ``Golden lagoon 951``, ``Effort push-617``,
    ``federal her``, Faker word salad."""
    return bool(_PLACEHOLDER.search(value)) or any(p.match(value) for p in _JUNK)


# -- pools -----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def pools() -> dict[str, tuple[str, ...]]:
    """Faker's data drawn once per process with a fixed seed (Faker templates are slow)."""
    from faker import Faker

    f = Faker("en_US")
    f.seed_instance(20240601)

    def many(fn: Any, n: int) -> tuple[str, ...]:
        return tuple(dict.fromkeys(fn() for _ in range(n)))

    companies = many(f.company, 400)
    out = {
        "first": many(f.first_name, 600),
        "last": many(f.last_name, 600),
        "company": tuple(c for c in companies if not _PLACEHOLDER.search(c)),
        "city": many(f.city, 300),
        "street": many(f.street_address, 300),
        "street2": many(f.secondary_address, 100),
        "state": many(f.state, 200),
        "state_abbr": many(f.state_abbr, 200),
        "postcode": many(f.postcode, 300),
        "country": many(f.country, 300),
        "country_code": many(f.country_code, 300),
        "currency": ("USD", "EUR", "GBP", "JPY", "CAD", "AUD", "CHF", "SEK", "INR", "BRL"),
        "timezone": many(f.timezone, 300),
        "color": many(f.safe_color_name, 100),
        "catch": many(f.catch_phrase, 300),
        "job": many(f.job, 300),
        "file": many(lambda: f.file_name(category="office"), 200),
        "username": many(f.user_name, 400),
    }
    out["named"] = out["company"] + out["catch"]
    return out


class FieldValues:
    """Realistic values for fields, drawn from ``rng`` (and ``domains`` for URLs and emails).

    ``hint`` (an environment id) tunes a few kinds: an Azure ``location`` is ``westeurope``,
    a Google Cloud one ``europe-west1``, an AWS ``region`` ``eu-west-1``.
    """

    def __init__(
        self, rng: random.Random, domains: list[str] | None = None, hint: str = ""
    ) -> None:
        self.rng = rng
        self.p = pools()
        self.domains = domains or ["example.com", "example.org", "example.net"]
        self.hint = hint.lower()

    # -- building blocks ------------------------------------------------------------------
    def pick(self, pool: str) -> str:
        return self.rng.choice(self.p[pool])

    def hex(self, n: int) -> str:
        return "".join(self.rng.choice(_HEXMAP) for _ in range(n))

    def token(self, n: int = 32) -> str:
        return "".join(self.rng.choice(_TOKEN) for _ in range(n))

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{self.rng.choice('89ab')}{h[17:20]}-{h[20:]}"

    def moment(self, lo: int = 0, span: int = _SPAN) -> dt.datetime:
        return _EPOCH + dt.timedelta(seconds=lo + self.rng.randrange(span))

    def datetime(self) -> str:
        return self.moment().strftime("%Y-%m-%dT%H:%M:%SZ")

    def domain(self) -> str:
        return self.rng.choice(self.domains)

    def full_name(self) -> str:
        return f"{self.pick('first')} {self.pick('last')}"

    def username(self) -> str:
        first, last = self.pick("first").lower(), self.pick("last").lower()
        return self.rng.choice((f"{first}.{last}", f"{first[0]}{last}", f"{first}{last[:1]}"))

    def email(self) -> str:
        return f"{self.username()}@{self.domain()}"

    def slug(self, key: str = "", noun: str = "") -> str:
        """A machine name that fits the record: ``rg-billing-prod`` for a resource group or
        a cluster (infrastructure is named by purpose and stage), ``jlopez`` for a person,
        ``billing-template`` for anything else (a user named ``orders-us`` reads as noise)."""
        if not noun or infra(key, noun):
            prefix = next((v for k, v in _SLUG_PREFIX.items() if k in key), "")
            core = f"{self.rng.choice(_TOPICS)}-{self.rng.choice(_STAGES)}"
            return f"{prefix}-{core}" if prefix else core
        if fold(noun) in PERSON_NOUNS or fold(singular(noun)) in PERSON_NOUNS:
            return self.username().replace(".", "-")
        last = words_of(singular(noun))[-1:]
        if last and last[0] in ("tag", "label", "category", "keyword", "topic"):
            return self.rng.choice(_TAGS)
        if last and last[0] in ("location", "region"):
            return self.by_kind("region")
        thing = [w for w in words_of(singular(noun)) if w not in _NOT_THINGS][-2:]
        tail = "-".join(thing) if thing else self.rng.choice(("main", "shared", "primary"))
        return f"{self.rng.choice(_TOPICS)}-{tail}"

    def sentence(self) -> str:
        return self.rng.choice(_SENTENCES).format(
            first=self.pick("first"),
            last=self.pick("last"),
            company=self.pick("company"),
            city=self.pick("city"),
            weekday=self.rng.choice(_WEEKDAYS),
            team=self.rng.choice(_TEAMS),
            topic=self.rng.choice(_TOPICS),
        )

    def title(self) -> str:
        if self.rng.random() < 0.85:
            return self.rng.choice(_TITLES)
        return self.pick("catch")

    def label(self, noun: str) -> str:
        """A display name for a non-person record, by what it is for: ``Churn Review`` (a
        model, a rule, a mapping), ``Spring Launch Plan`` (nouns people keep in names),
        ``Data Engineering`` (a team)."""
        head = words_of(singular(noun))[-1:] if noun else []
        if head and head[0] in _TEAM_HEADS and self.rng.random() < 0.5:
            return self.rng.choice(_TEAMS)
        purpose = self.rng.choice(_PURPOSES)
        if head and head[0] in _NAMED_HEADS and self.rng.random() < 0.4:
            return f"{purpose} {head[0].capitalize()}"
        return purpose

    def url(self, key: str = "", noun: str = "") -> str:
        # a collection of the record's kind ("/invoices/..."), else a topic ("/sales/...")
        path = "".join(f"{w}s" for w in words_of(singular(noun))[-1:]) or self.rng.choice(_TOPICS)
        if "webhook" in key or "callback" in key or "hook" in key:
            return f"https://{self.domain()}/webhooks/{self.rng.choice(_TOPICS)}"
        if "redirect" in key:
            return f"https://{self.domain()}/oauth/callback"
        if "self" in key or "href" in key:
            return f"https://api.{self.domain()}/v1/{path}/{self.hex(10)}"
        if "avatar" in key or "image" in key or "photo" in key or "logo" in key or "icon" in key:
            return f"https://cdn.{self.domain()}/images/{self.hex(12)}.png"
        return f"https://{self.domain()}/{path}/{self.rng.choice(_TOPICS)}"

    # -- by kind --------------------------------------------------------------------------
    def by_kind(self, kind: str, key: str = "", noun: str = "") -> str:
        """A string of ``kind`` (see :func:`kind_of`); ``key`` is the folded field name."""
        r, rng = self.rng, self.rng
        simple: dict[str, Any] = {
            "datetime": self.datetime,
            "date": lambda: self.datetime()[:10],
            "time": lambda: f"{r.randrange(7, 20):02d}:{r.choice((0, 15, 30, 45)):02d}:00",
            "birthdate": lambda: (
                f"{r.randrange(1950, 2005)}-{r.randrange(1, 13):02d}-{r.randrange(1, 29):02d}"
            ),
            "duration": lambda: rng.choice(_DURATIONS),
            "seconds": lambda: str(rng.choice(_SECONDS)),
            "uuid": self.uuid,
            "id": lambda: f"{(key[:3] or 'id')}_{self.hex(10)}",
            "email": self.email,
            "hostname": lambda: rng.choice((self.domain(), f"api.{self.domain()}")),
            "ip": lambda: (
                f"{r.randrange(11, 223)}.{r.randrange(256)}.{r.randrange(256)}."
                f"{r.randrange(1, 255)}"
            ),
            "secret": lambda: self.token(32),
            "etag": lambda: f'"{self.hex(16)}"',
            "discriminator": lambda: "_".join(words_of(singular(noun))) or "record",
            "first_name": lambda: self.pick("first"),
            "last_name": lambda: self.pick("last"),
            "full_name": self.full_name,
            "username": self.username,
            "phone": lambda: (
                f"+1{r.randrange(201, 990)}{r.randrange(200, 999)}{r.randrange(10000):04d}"
            ),
            "company": lambda: self.pick("company"),
            "product": lambda: f"{rng.choice(_PRODUCT_ADJ)} {rng.choice(_PRODUCT_NOUN)}",
            "label": lambda: self.label(noun),
            "title": self.title,
            "sentence": self.sentence,
            "error": lambda: rng.choice(_ERRORS),
            "reason": lambda: rng.choice(_REASONS),
            "street": lambda: self.pick("street"),
            "street2": lambda: self.pick("street2"),
            "city": lambda: self.pick("city"),
            "state": lambda: self.pick("state"),
            "country": lambda: self.pick("country"),
            "countrycode": lambda: self.pick("country_code"),
            "postcode": lambda: self.pick("postcode"),
            "currency": lambda: self.pick("currency"),
            "money": lambda: f"{r.randrange(5, 5000)}.{r.choice((0, 25, 50, 99)):02d}",
            "color": lambda: self.pick("color"),
            "locale": lambda: rng.choice(_LOCALES),
            "language": lambda: rng.choice(_LANGS),
            "timezone": lambda: self.pick("timezone"),
            "version": lambda: f"{r.randrange(1, 5)}.{r.randrange(0, 12)}.{r.randrange(0, 20)}",
            "code": lambda: (
                f"{''.join(r.choice(string.ascii_uppercase) for _ in range(3))}-"
                f"{r.randrange(1000, 10000)}"
            ),
            "tag": lambda: rng.choice(_TAGS),
            "status": lambda: rng.choice(_STATUSES),
            "region": lambda: rng.choice(
                _AZURE_REGIONS
                if "azure" in self.hint
                else _GCP_REGIONS
                if "googleapis" in self.hint
                else _REGIONS
            ),
            "location": lambda: (
                rng.choice(_AZURE_REGIONS)
                if "azure" in self.hint
                else rng.choice(_GCP_REGIONS)
                if "googleapis" in self.hint
                else f"{self.pick('city')}, {self.pick('state_abbr')}"
            ),
            "slug": lambda: self.slug(key, noun),
            "team": lambda: rng.choice(_TEAMS),
            "job": lambda: self.pick("job"),
            "method": lambda: rng.choice(_HTTP),
            "protocol": lambda: rng.choice(_PROTOCOLS),
            "format": lambda: rng.choice(_FORMATS),
            "mime": lambda: rng.choice(_MIMES),
            "filename": lambda: self.pick("file"),
            "ipath": lambda: f"/data/{rng.choice(_TOPICS)}/{self.pick('file')}",
            "provider": lambda: rng.choice(_PROVIDERS),
            "channel": lambda: rng.choice(_CHANNELS),
            "scope": lambda: rng.choice(_SCOPES),
            "query": lambda: rng.choice(_QUERIES),
            "size": lambda: rng.choice(_SIZES),
            "count": lambda: str(r.randrange(1, 40)),
            "digits": lambda: "".join(r.choice(string.digits) for _ in range(10)),
            "url": lambda: self.url(key, noun),
            "image": lambda: self.url(key or "image", noun),
        }
        make = simple.get(kind)
        if make is not None:
            return str(make())
        # free text of no known kind: a purpose or a title, never a company or a slogan
        # (read as the value of a field they do not fit)
        return rng.choice(_PURPOSES) if r.random() < 0.6 else rng.choice(_TITLES)

    def number(self, name: str, schema: dict[str, Any], integer: bool) -> int | float:
        """A number in a plausible range for the field (amounts, percents, ports, years...)."""
        words = words_of(name) or [fold(name)]
        if any(w in _DURATION_WORDS for w in words):
            opts = [s for s in _SECONDS if _in(s, schema)]
            if integer and opts:
                return self.rng.choice(opts)
        lo, hi = number_range(name, schema)
        if integer:
            low = int(-(-lo // 1))
            return self.rng.randint(low, max(low, int(hi // 1)))
        return round(self.rng.uniform(lo, hi), 2)

    def string(self, name: str, schema: dict[str, Any] | None = None, noun: str = "") -> str:
        """A realistic string for the field, honouring ``example``/``format``/length bounds."""
        schema = schema if isinstance(schema, dict) else {}
        enum = [v for v in schema.get("enum") or () if isinstance(v, str)]
        if enum:
            return self.rng.choice([v for v in enum if not is_sentinel(v)] or enum)
        kind = kind_of(name, schema, noun)
        example = schema.get("example")
        if isinstance(example, str) and example and self.rng.random() < 0.3:
            if not is_junk(example) and kind not in ("id", "uuid", "secret", "etag"):
                return example
        text = self.by_kind(kind, fold(name), noun)
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and not matches(pattern, text):
            text = self._for_pattern(pattern, text)
        return fit(text, schema, self.rng)

    def _for_pattern(self, pattern: str, text: str) -> str:
        """Cheap repairs for the common patterns (lower-case slugs, digits, upper codes)."""
        for candidate in (
            text.lower(),
            re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-"),
            re.sub(r"[^A-Za-z0-9]+", "", text),
            text.upper(),
            self.hex(8),
            "".join(self.rng.choice(string.digits) for _ in range(8)),
        ):
            if matches(pattern, candidate):
                return candidate
        return text


def matches(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return True


def _in(value: float, schema: dict[str, Any]) -> bool:
    mn, mx = schema.get("minimum"), schema.get("maximum")
    ok_lo = not isinstance(mn, int | float) or value >= mn
    ok_hi = not isinstance(mx, int | float) or value <= mx
    return ok_lo and ok_hi


def fit(text: str, schema: dict[str, Any], rng: random.Random) -> str:
    """``text`` cut or padded (with hex digits, like an id) to the schema's length bounds."""
    lo, hi = schema.get("minLength"), schema.get("maxLength")
    if isinstance(hi, int) and len(text) > hi:
        text = text[: max(hi, 0)].rstrip()
    if isinstance(lo, int) and len(text) < lo:
        text += "".join(rng.choice(_HEXMAP) for _ in range(lo - len(text)))
    return text


def singular(name: str) -> str:
    """``projects`` -> ``project``, ``entries`` -> ``entry`` (good enough for nouns)."""
    if name.endswith(("series", "species")):
        return name
    if name.endswith("ies") and len(name) > 4:
        return name[:-3] + "y"
    if (name.endswith(("sses", "shes", "xes")) or re.search(r"[^aeiou]ches$", name)) and len(
        name
    ) > 4:
        return name[:-2]
    if name.endswith("s") and not name.endswith("ss") and len(name) > 3:
        return name[:-1]
    return name
