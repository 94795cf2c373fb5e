"""Word segmentation of scripts without spaces, and the text full-text search vectors are built from."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from documents.language.search_text import analysis_of, search_input, stopwords_for
from documents.language.segmentation import segment, word_spans

TEXTS = {
    "zh": "托马斯·戴维斯在第50届超级碗中迫使对方掉球三次。NFL球员",
    "ja": "東京都は日本の首都であり、世界最大の都市圏を持つ。Tokyo",
    "th": "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย และเป็นเมืองที่ใหญ่ที่สุด",
}


@pytest.mark.parametrize("language", sorted(TEXTS))
def test_word_spans_slice_the_original_text_in_order(language):
    text = TEXTS[language]
    spans = word_spans(text, language=language)
    assert len(spans) > 5
    assert all(0 <= s < e <= len(text) for s, e in spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # ordered, never overlapping
    # Every character of the script runs is in exactly one word: joining the words gives them back.
    segmented = segment(text, language=language)
    assert segmented.split() != [text]
    assert "".join(segmented.split()) == "".join(text.split())
    assert [text[s:e] for s, e in spans] == [w for w in segmented.split()
                                              if any(text[s:e] == w for s, e in spans)]


def test_chinese_words_are_words():
    assert segment("北京是中国的首都").split() == ["北京", "是", "中国", "的", "首都"]


def test_text_in_other_scripts_is_left_alone():
    text = "The bridge (1890) is 120 m long; die Brücke ist alt."
    assert segment(text) == text
    assert word_spans(text) == []


def test_stop_words_of_simple_languages_are_dropped_alike_from_any_text():
    question = search_input("Kdy byl postaven hrad v Praze?", language="cs", config="simple")
    # "kdy", "byl", "v" dropped; Czech words also become their lemmas (tests/documents/language/test_lemmas.py)
    assert question.split() == ["postaveny", "hrad", "praha?"]
    # a configuration that stems drops its own stop words: nothing is removed before it
    assert search_input("When was the castle built?", language="en", config="english") == "When was the castle built?"
    assert "的" in stopwords_for("zh")
    assert "的" not in search_input("北京是中国的首都", language="zh", config="simple").split()


@pytest.mark.parametrize("language, config, analysis", [
    ("en", "english", "stemmed"), ("zh", "simple", "segmented"), ("th", "simple", "segmented"),
    ("cs", "simple", "lemmatised"), ("vi", "simple", "stop words"), ("lo", "simple", ""), ("km", "simple", ""),
    ("", "simple", ""),
])
def test_which_languages_the_full_text_arm_can_analyse(language, config, analysis):
    assert analysis_of(language, config) == analysis


def test_segmenters_load_from_their_wheels_without_network_or_writes(tmp_path):
    """A fresh process in a network namespace of its own (no interface but a down loopback), with an
    empty HOME and cache, segments all three scripts and writes nothing there."""
    home = tmp_path / "home"
    home.mkdir()
    code = ("from documents.language.segmentation import segment;"
            "print(segment('北京是中国的首都')); print(segment('東京は日本の首都です'));"
            "print(segment('กรุงเทพมหานครเป็นเมืองหลวง'))")
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
    env.pop("PYTHAINLP_OFFLINE", None)
    env.pop("PYTHAINLP_READ_ONLY", None)
    done = subprocess.run(["unshare", "--net", sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[2].split() == ["กรุงเทพมหานคร", "เป็น", "เมืองหลวง"]
    assert list(home.iterdir()) == []  # nothing written (pythainlp would create ~/pythainlp-data)
