"""Scanned PDFs made on the spot: text drawn into page images with Pillow, saved as image-only PDFs.

Nothing here has a text layer, so every page must go through OCR. Fonts come from Debian
(fonts-dejavu-core for Latin, Cyrillic and Vietnamese; fonts-noto-cjk for Chinese), installed
by `make test` / `ensure_scan_fonts()` when missing. The texts were written for these tests.
"""
from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
NOTO_CJK = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")

# language code -> (ISO 639-1 for the document field, paragraphs)
SAMPLES: dict[str, tuple[str, list[str]]] = {
    "eng": ("en", [
        "The annual report of the water board describes how the reservoir was repaired.",
        "Engineers replaced the old valves in March and tested every pump twice.",
        "The budget for next year includes money for a new treatment plant.",
    ]),
    "deu": ("de", [
        "Der Jahresbericht des Wasserverbandes beschreibt die Reparatur des Speichers.",
        "Die Ingenieure ersetzten im März die alten Ventile und prüften jede Pumpe.",
        "Der Haushalt für das nächste Jahr enthält Geld für eine neue Kläranlage.",
    ]),
    "fra": ("fr", [
        "Le rapport annuel de la régie des eaux décrit la réparation du réservoir.",
        "Les ingénieurs ont remplacé les vieilles vannes en mars et testé chaque pompe.",
        "Le budget de l'année prochaine prévoit une nouvelle station d'épuration.",
    ]),
    "spa": ("es", [
        "El informe anual de la junta del agua describe cómo se reparó el embalse.",
        "Los ingenieros cambiaron las válvulas viejas en marzo y probaron cada bomba.",
        "El presupuesto del próximo año incluye dinero para una nueva depuradora.",
    ]),
    "ces": ("cs", [
        "Výroční zpráva vodárenské společnosti popisuje opravu nádrže.",
        "Inženýři v březnu vyměnili staré ventily a každé čerpadlo dvakrát vyzkoušeli.",
        "Rozpočet na příští rok počítá s penězi na novou čistírnu odpadních vod.",
    ]),
    "rus": ("ru", [
        "Годовой отчёт водного совета описывает ремонт водохранилища.",
        "Инженеры заменили старые клапаны в марте и дважды проверили каждый насос.",
        "Бюджет на следующий год включает деньги на новую очистную станцию.",
    ]),
    "vie": ("vi", [
        "Báo cáo hằng năm của ban quản lý nước mô tả việc sửa chữa hồ chứa.",
        "Các kỹ sư đã thay những van cũ vào tháng ba và kiểm tra từng máy bơm.",
        "Ngân sách năm tới có tiền cho một nhà máy xử lý nước mới.",
    ]),
    "chi_sim": ("zh", [
        "水务委员会的年度报告介绍了水库的维修情况。",
        "工程师们在三月更换了旧阀门，并对每台水泵进行了两次测试。",
        "明年的预算包括建设一座新的污水处理厂的资金。",
    ]),
}


def ensure_scan_fonts() -> None:
    """Install the Debian font packages when missing (root with apt-get, like the browser test)."""
    missing = [pkg for pkg, path in (("fonts-dejavu-core", DEJAVU), ("fonts-noto-cjk", NOTO_CJK)) if not path.exists()]
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError(f"Fonts missing for the scanned-PDF tests: apt-get install {' '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing], env=env, check=True,
                   capture_output=True, timeout=900)


def _font(language: str, size: int):
    from PIL import ImageFont

    return ImageFont.truetype(str(NOTO_CJK if language == "chi_sim" else DEJAVU), size)


def page_image(paragraphs: list[str], language: str, *, dpi: int = 200, noise: float = 0.0, seed: int = 1):
    """An A4 page at ``dpi`` with the paragraphs drawn in black on white (lines wrapped)."""
    from PIL import Image, ImageDraw

    width, height = int(8.27 * dpi), int(11.69 * dpi)
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    size = max(10, int(dpi * 0.16))  # about 11.5 pt
    font = _font(language, size)
    margin, y = int(dpi * 0.9), int(dpi * 1.0)
    max_width = width - 2 * margin
    for paragraph in paragraphs:
        for line in _wrap(draw, paragraph, font, max_width, cjk=language == "chi_sim"):
            draw.text((margin, y), line, font=font, fill=0)
            y += int(size * 1.5)
        y += int(size * 0.8)
    if noise:
        rng = random.Random(seed)
        pixels = image.load()
        for _ in range(int(width * height * noise)):
            pixels[rng.randrange(width), rng.randrange(height)] = rng.choice((0, 255))
    return image


def _wrap(draw, text: str, font, max_width: int, *, cjk: bool) -> list[str]:
    units = list(text) if cjk else text.split(" ")
    joiner = "" if cjk else " "
    lines, current = [], ""
    for unit in units:
        candidate = current + joiner + unit if current else unit
        if draw.textlength(candidate, font=font) <= max_width:
            current = candidate
        else:
            lines.append(current)
            current = unit
    if current:
        lines.append(current)
    return lines


def scanned_pdf(path: Path, pages: list[list[str]], language: str, *, dpi: int = 200, noise: float = 0.0) -> Path:
    """Write an image-only PDF whose page i shows pages[i] (paragraphs) in ``language``'s script."""
    ensure_scan_fonts()
    images = [page_image(paras, language, dpi=dpi, noise=noise, seed=i) for i, paras in enumerate(pages)]
    images[0].save(path, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    for image in images:
        image.close()
    return path


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate: edit distance over the reference length, whitespace ignored."""
    ref = "".join(reference.split())
    hyp = "".join(hypothesis.split())
    if not ref:
        return 0.0 if not hyp else 1.0
    previous = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        current = [i]
        for j, h in enumerate(hyp, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (r != h)))
        previous = current
    return previous[-1] / len(ref)
