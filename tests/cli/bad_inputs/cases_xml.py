"""SimGrid platform XML for ``platform check`` and ``run --platform``: refused at load, in one line.

Some of these SimGrid 4.1 loads without a word and then aborts mid-run ("The Impossible
Did Happen"): a negative speed, a 0 B/s link.
"""

from bad_inputs import case
from bad_inputs.formats import BILLION_LAUGHS_DTD, XXE_DTD, platform_xml

CHECK = "platform check {tmp}/p.xml"
RUN = "run --platform {tmp}/p.xml --workload allreduce --bytes 1MB --iterations 1"

CASES = [
    case("xml-malformed", CHECK, r"p\.xml.*not valid XML", files={"p.xml": "<platform version='4.1'><zone"}),
    case("xml-malformed-run", RUN, r"p\.xml.*not valid XML", files={"p.xml": "<platform version='4.1'><zone"}),
    case("xml-empty", CHECK, r"p\.xml.*not valid XML", files={"p.xml": ""}),
    case("xml-binary-garbage", CHECK, r"p\.xml", files={"p.xml": bytes(range(256)) * 8}),
    case("xml-wrong-root", CHECK, r"<graphml>.*<platform>", files={"p.xml": "<graphml/>\n"}),
    case("xml-version-old", CHECK, r"version '3'.*4\.1", files={"p.xml": platform_xml(version='version="3"')}),
    case("xml-version-future", RUN, r"version '5'.*4\.1", files={"p.xml": platform_xml(version='version="5"')}),
    case("xml-version-missing", CHECK, r"no version.*4\.1", files={"p.xml": platform_xml(version="")}),
    case("xml-host-without-speed", CHECK, r"host 'xpu0'.*speed", files={"p.xml": platform_xml(host_a="")}),
    case(
        "xml-host-speed-negative",
        CHECK,
        r"host 'xpu0'.*speed '-1f'.*> 0",
        files={"p.xml": platform_xml(host_a='speed="-1f"')},
    ),
    case(
        "xml-host-speed-negative-run",
        RUN,
        r"host 'xpu0'.*speed '-1f'",
        files={"p.xml": platform_xml(host_a='speed="-1f"')},
    ),
    case("xml-host-speed-zero", CHECK, r"speed '0f'", files={"p.xml": platform_xml(host_a='speed="0f"')}),
    case("xml-host-speed-nan", CHECK, r"speed 'nanf'", files={"p.xml": platform_xml(host_a='speed="nanf"')}),
    case(
        "xml-host-pstate-negative", CHECK, r"speed '1Gf,-1f'", files={"p.xml": platform_xml(host_a='speed="1Gf,-1f"')}
    ),
    case(
        "xml-link-zero-bandwidth",
        CHECK,
        r"link 'l'.*bandwidth '0Bps'",
        files={"p.xml": platform_xml(link='bandwidth="0Bps" latency="1us"')},
    ),
    case(
        "xml-link-zero-bandwidth-run",
        RUN,
        r"link 'l'.*bandwidth '0Bps'",
        files={"p.xml": platform_xml(link='bandwidth="0Bps" latency="1us"')},
    ),
    case(
        "xml-link-inf-bandwidth",
        CHECK,
        r"bandwidth 'infBps'",
        files={"p.xml": platform_xml(link='bandwidth="infBps" latency="1us"')},
    ),
    case(
        "xml-link-tiny-bandwidth",
        CHECK,
        r"bandwidth '1e-300Bps'.*>= 1 B/s",
        files={"p.xml": platform_xml(link='bandwidth="1e-300Bps" latency="1us"')},
    ),
    case(
        "xml-link-negative-latency",
        CHECK,
        r"latency '-1us'",
        files={"p.xml": platform_xml(link='bandwidth="1GBps" latency="-1us"')},
    ),
    case(
        "xml-link-huge-latency",
        RUN,
        r"latency '1e300s'.*at most",
        files={"p.xml": platform_xml(link='bandwidth="1GBps" latency="1e300s"')},
    ),
    case("xml-link-no-bandwidth", CHECK, r"link 'l'.*bandwidth", files={"p.xml": platform_xml(link='latency="1us"')}),
    case(
        "xml-link-bad-unit",
        CHECK,
        r"unknown unit.*GBananas",
        files={"p.xml": platform_xml(link='bandwidth="1GBananas" latency="1us"')},
    ),
    case(
        "xml-hosts-without-properties-run",
        RUN + " --xpus-from property",
        r"--xpus-from all-hosts",
        files={"p.xml": platform_xml(props=False)},
    ),  # fmt: skip
    case(
        "xml-billion-laughs",
        CHECK,
        r"p\.xml",
        files={"p.xml": platform_xml(doctype=BILLION_LAUGHS_DTD, host_a='speed="1Gf" coordinates="&lol9;"')},
        timeout=30,
    ),
    case("xml-xxe", CHECK, r"p\.xml.*entit", files={"p.xml": platform_xml(doctype=XXE_DTD, host_a='speed="&xxe;"')}),
    case(
        "xml-zone-routing-unknown",
        RUN,
        r"zone 'z' has routing 'Frobnicate'.*Full",
        files={"p.xml": platform_xml().replace('routing="Full"', 'routing="Frobnicate"')},
    ),
    case(
        "xml-host-core-zero",
        CHECK,
        r"host 'xpu0' has core '0'.*>= 1",
        files={"p.xml": platform_xml(host_a='speed="1Gf" core="0"')},
    ),
    case(
        "xml-cluster-speed-negative",
        CHECK,
        r"cluster 'c' has speed '-1Gf'",
        files={
            "p.xml": '<?xml version="1.0"?>\n<platform version="4.1"><cluster id="c" prefix="n" suffix="" '
            'radical="0-3" speed="-1Gf" bw="1GBps" lat="1us"/></platform>\n'
        },
    ),
    case(
        "xml-route-unknown-link",
        CHECK,
        r"Link not found: nope",
        files={"p.xml": platform_xml().replace('<link_ctn id="l"/>', '<link_ctn id="nope"/>')},
    ),
    case(
        "xml-full-zone-without-route-run",
        RUN,
        r"no route from host 'xpu0' to host 'xpu1'",
        files={"p.xml": platform_xml().replace('<route src="xpu0" dst="xpu1"><link_ctn id="l"/></route>', "")},
    ),
    case("xml-missing", CHECK, r"p\.xml' does not exist"),
    case("xml-is-directory", CHECK.replace("{tmp}/p.xml", "{tmp}"), r"is a directory"),
    case("xml-is-directory-run", RUN.replace("{tmp}/p.xml", "{tmp}"), r"is a directory"),
    case("xml-unreadable", "platform check /proc/self/mem", r"/proc/self/mem.*cannot be read"),
]
