"""The full-text arm in languages PostgreSQL has no configuration for (`simple`): with and without stop words.

    python bench/simple_languages.py

Our own small passages and questions in Czech, Vietnamese and Hindi (written for this bench; each
question's answer is in the passage of the same index). For each language and each analysis
("simple" alone, "simple + stop words" = documents/language/search_text.py) it reports how many passages
a question's OR query matches on average (the arm's candidates) and how often the best-ranked
passage (`ts_rank`, normalisation 1, as the arm ranks) is the right one. Runs the analysis in the
configured PostgreSQL (no tables are touched). Prints JSON.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragsite.settings")

SETS = {
    "cs": (
        ["Pražský hrad byl založen v devátém století a je největším hradním komplexem na světě.",
         "Vltava je nejdelší řeka v České republice a protéká také hlavním městem Prahou.",
         "Karlův most se začal stavět v roce 1357 za vlády císaře Karla IV. a je dlouhý 516 metrů.",
         "Brno je druhé největší město v zemi a je známé svým výstavištěm a univerzitami.",
         "Pivo se v Čechách vaří už od středověku a plzeňský ležák vznikl v roce 1842.",
         "Sněžka je nejvyšší hora České republiky a měří 1603 metrů nad mořem."],
        ["Kdy byl založen Pražský hrad?", "Která řeka je nejdelší v České republice?",
         "Jak dlouhý je Karlův most?", "Čím je známé Brno?", "Kdy vznikl plzeňský ležák?",
         "Jak vysoká je Sněžka?"],
    ),
    "vi": (
        ["Vịnh Hạ Long nằm ở tỉnh Quảng Ninh và có gần hai nghìn hòn đảo đá vôi.",
         "Sông Mê Kông chảy qua sáu quốc gia trước khi đổ ra biển ở miền Nam Việt Nam.",
         "Phở là món ăn truyền thống với bánh phở, nước dùng bò hoặc gà và các loại rau thơm.",
         "Thành phố Hồ Chí Minh là thành phố đông dân nhất và là trung tâm kinh tế của cả nước.",
         "Cà phê được người Pháp đưa vào Việt Nam vào thế kỷ mười chín.",
         "Đỉnh Phan Xi Păng cao hơn ba nghìn mét và được gọi là nóc nhà Đông Dương."],
        ["Vịnh Hạ Long có bao nhiêu hòn đảo?", "Sông Mê Kông chảy qua mấy quốc gia?",
         "Phở được nấu với những gì?", "Thành phố nào đông dân nhất Việt Nam?",
         "Ai đưa cà phê vào Việt Nam?", "Đỉnh Phan Xi Păng cao bao nhiêu?"],
    ),
    "hi": (
        ["ताजमहल आगरा में यमुना नदी के किनारे स्थित है और इसे शाहजहाँ ने बनवाया था।",
         "गंगा नदी हिमालय के गंगोत्री ग्लेशियर से निकलती है और बंगाल की खाड़ी में गिरती है।",
         "दिल्ली भारत की राजधानी है और यहाँ लाल किला और कुतुब मीनार जैसे स्मारक हैं।",
         "क्रिकेट भारत का सबसे लोकप्रिय खेल है और देश ने 1983 में पहला विश्व कप जीता।",
         "दीवाली रोशनी का त्योहार है जो हर साल कार्तिक महीने की अमावस्या को मनाया जाता है।",
         "मुंबई भारत की आर्थिक राजधानी है और यहाँ हिंदी फिल्म उद्योग बॉलीवुड स्थित है।"],
        ["ताजमहल किसने बनवाया था?", "गंगा नदी कहाँ से निकलती है?", "दिल्ली में कौन से स्मारक हैं?",
         "भारत ने पहला क्रिकेट विश्व कप कब जीता?", "दीवाली कब मनाई जाती है?",
         "बॉलीवुड किस शहर में है?"],
    ),
}


def main() -> None:
    import django

    django.setup()
    from django.db import connection

    from documents.language import detect_language, detect_question_language
    from documents.language import search_input
    from retrieval.arms import fts_query_text

    report = {}
    with connection.cursor() as cursor:
        for language, (passages, questions) in SETS.items():
            report[language] = {"passages": len(passages), "questions": len(questions),
                                "detected": {"passages": sorted({detect_language(p) for p in passages}),
                                             "questions": sorted({detect_question_language(q) for q in questions})}}
            for name, stop_language in (("simple", ""), ("simple + stop words", language)):
                docs = [search_input(p, language=stop_language, config="simple") for p in passages]
                matched, right = 0, 0
                for index, question in enumerate(questions):
                    text = fts_query_text(question, "simple", stop_language)
                    cursor.execute(
                        "WITH q AS (SELECT array_to_string(array_agg(quote_literal(l)), ' | ') AS s "
                        "FROM unnest(tsvector_to_array(to_tsvector('simple', %s))) l) "
                        "SELECT d.n, ts_rank(to_tsvector('simple', d.text), to_tsquery('simple', q.s), 1), "
                        "to_tsvector('simple', d.text) @@ to_tsquery('simple', q.s) "
                        "FROM q, unnest(%s::text[]) WITH ORDINALITY AS d(text, n)",
                        [text, docs])
                    rows = cursor.fetchall()
                    hits = [(n - 1, rank) for n, rank, match in rows if match]
                    matched += len(hits)
                    best = max(hits, key=lambda h: h[1])[0] if hits else None
                    right += best == index
                report[language][name] = {"passages_matched_per_question": round(matched / len(questions), 2),
                                           "best_is_right": round(right / len(questions), 3)}
    print(json.dumps(report, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
